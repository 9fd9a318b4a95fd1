import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { workflowStatements } from '../../lib/engines/postgres/workflow-sql.js';
import { moveRunText, setWaitingText } from '../../lib/workflows/runs.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';
import { type PlanNode, explainAnalyzed, indexesUsed, withClient } from './pg-helpers.js';

function runIndexes(plan: PlanNode): string[] {
  return [...indexesUsed(plan)].filter((name) => name.startsWith('workflow_runs'));
}

/**
 * PostgreSQL only: the statements that look a run up by id and check its state (ending it, moving it,
 * noting what it waits for) read the run by primary key. With statistics taken while no run was running,
 * the planner rated the by-state index (ns, state, created_at, id) as cheap as the key, and each lookup
 * then read the entry of every running run, parked ones included.
 */
describePg('postgres run lookups by id', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await store.close();
    await db.destroy();
  });

  it('read the run by primary key however many runs are running', async () => {
    const s = `"${db.location}"`;
    const insert = (state: string, from: number, to: number) =>
      `INSERT INTO ${s}.workflow_runs (ns, id, workflow, version, state, created_at, updated_at, finished_at)
       SELECT 'rl', 'r' || g, 'w', 1, '${state}', g, g, ${state === 'running' ? 'NULL' : 'g'}
       FROM generate_series(${from}, ${to}) AS g`;
    const statements = workflowStatements(engineSql(db.location).schema);
    const seam = { dialect: 'postgres' as const, prefix: `${s}.` };
    const states = await withClient(async (c) => {
      await c.query(insert('completed', 1, 5_000));
      await c.query(`ANALYZE ${s}.workflow_runs`);
      // Parked runs, after the statistics were taken.
      await c.query(insert('running', 5_001, 7_000));
      await c.query('SET plan_cache_mode = force_generic_plan');
      const cases: [string, string, string][] = [
        ['p_waiting', setWaitingText(seam), `'rl', 'r5001', 'signal:go', NULL`],
        ['p_move', moveRunText(seam, true), `'rl', 'r5002', 'cancelled', 'running', NULL, NULL`],
        [
          'p_end',
          statements.end.text,
          `'g', 'end:r5003', 'j:r5003', '{"type":"end"}', 'rl', 'r5003', 'completed', 'null', NULL, 'w'`,
        ],
        [
          'p_ends',
          statements.endMany.text,
          `'g', ARRAY['end:r5004'], ARRAY['j:r5004'], ARRAY['{"type":"end"}'], ARRAY['rl'], ARRAY['r5004'],
           ARRAY['failed'], ARRAY[NULL]::text[], ARRAY['{"name":"Error"}'], ARRAY['w'], ARRAY[NULL]::text[],
           ARRAY[NULL]::text[], ARRAY[NULL]::bigint[], ARRAY[NULL]::text[], 'q', ARRAY[]::bigint[], 'w'`,
        ],
      ];
      for (const [name, text, args] of cases) {
        await c.query(`PREPARE ${name} AS ${text}`);
        expect([name, runIndexes(await explainAnalyzed(c, `EXECUTE ${name}(${args})`))]).toEqual([
          name,
          ['workflow_runs_pkey'],
        ]);
      }
      const rows = await c.query(
        `SELECT id, state, waiting FROM ${s}.workflow_runs WHERE ns = 'rl' AND id IN ('r5001', 'r5002', 'r5003', 'r5004', 'r5005') ORDER BY id`,
      );
      return rows.rows as { id: string; state: string; waiting: string | null }[];
    });
    // EXPLAIN ANALYZE ran each statement: the runs it named moved, the next one did not.
    expect(states).toEqual([
      { id: 'r5001', state: 'running', waiting: 'signal:go' },
      { id: 'r5002', state: 'cancelled', waiting: null },
      { id: 'r5003', state: 'completed', waiting: null },
      { id: 'r5004', state: 'failed', waiting: null },
      { id: 'r5005', state: 'running', waiting: null },
    ]);
  });
});
