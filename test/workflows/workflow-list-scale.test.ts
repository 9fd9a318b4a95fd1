import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { createWorkflows } from '../../lib/workflows/index.js';
import { listQuery } from '../../lib/workflows/runs.js';
import { workflowSqlOf } from '../../lib/workflows/sql-seam.js';
import { contractEngines, withEngineDb } from '../helpers/engines.js';

// The runs list at scale: 100k runs, the first page of one state and the page after it are the right
// rows, read through an index (the query plan names one and sorts nothing), whatever the runs before.

const RUNS = 100_000;
const NS = 'wf-scale';

for (const engine of contractEngines()) {
  describe(`workflow runs list at scale [${engine.name}]`, () => {
    let store!: Store;
    withEngineDb(engine, (_d, s) => {
      store = s;
    });

    it(`pages ${RUNS} runs by state newest first through an index`, async () => {
      const sql = workflowSqlOf(store as object)!;
      const t = `${sql.prefix}workflow_runs`;
      // Run i started at 1_000_000 + i; every 10th is failed, the rest completed.
      const series =
        sql.dialect === 'postgres'
          ? `SELECT g AS i FROM generate_series(0, ${RUNS - 1}) g`
          : `WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${RUNS - 1}) SELECT i FROM s`;
      await sql.query(
        `INSERT INTO ${t} (ns, id, workflow, version, state, input, created_at, updated_at, finished_at, error)
         SELECT $1, 'run-' || i, 'scale', 1, CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'completed' END, 'null',
           1000000 + i, 1000000 + i, 1000000 + i,
           CASE WHEN i % 10 = 0 THEN '{"name":"Error","message":"boom","code":null}' END
         FROM (${series}) x`,
        [NS],
        true,
      );
      if (sql.dialect === 'postgres') await sql.query(`ANALYZE ${t}`, [], true);
      const w = createWorkflows(store, { workflows: [], worker: false, namespace: NS });
      try {
        const first = await w.listPage({ state: 'failed', order: 'desc', limit: 200 });
        expect(first.runs).toHaveLength(200);
        expect(first.runs[0]).toMatchObject({ id: `run-${RUNS - 10}`, state: 'failed', error: { message: 'boom' } });
        expect(first.runs[199]!.id).toBe(`run-${RUNS - 10 * 200}`);
        expect(first.next).not.toBeNull();
        const second = await w.listPage({ state: 'failed', order: 'desc', limit: 200, after: first.next! });
        expect(second.runs[0]!.id).toBe(`run-${RUNS - 10 * 201}`);
        const oldest = await w.list({ workflow: 'scale', limit: 2 });
        expect(oldest.map((r) => r.id)).toEqual(['run-0', 'run-1']);

        const q = listQuery(sql, NS, { state: 'failed', limit: 200, order: 'desc', after: null });
        if (sql.dialect === 'postgres') {
          const plan = (await sql.query(`EXPLAIN ${q.text}`, q.params, false)).map((r) => String(r['QUERY PLAN']));
          expect(plan.join('\n')).toMatch(/Index Scan.*workflow_runs_by_state/);
          expect(plan.join('\n')).not.toMatch(/Seq Scan|Sort/);
        } else {
          const plan = (await sql.query(`EXPLAIN QUERY PLAN ${q.text}`, q.params, false)).map((r) => String(r.detail));
          expect(plan.join('\n')).toMatch(/USING (COVERING )?INDEX __alkstore_workflow_runs_by_state/);
          expect(plan.join('\n')).not.toMatch(/TEMP B-TREE/);
        }
      } finally {
        await w.close();
      }
    }, 120_000);
  });
}
