import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { workflowStatements } from '../../lib/engines/postgres/workflow-sql.js';
import { moveRunText, setWaitingText } from '../../lib/workflows/runs.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';
import { type PlanNode, explainAnalyzed, indexesUsed, withClient } from './pg-helpers.js';

/** A scan node as auto_explain logs it with `log_analyze`. */
type ScanNode = PlanNode & { 'Index Cond'?: string; 'Rows Removed by Filter'?: number };

/** Every scan of `table` in a plan: its index, whether its index condition names `column`, the rows its filter dropped. */
function scansOf(plan: ScanNode, table: string, column: string): [string, boolean, number][] {
  const own: [string, boolean, number][] =
    plan['Relation Name'] === table
      ? [
          [
            plan['Index Name'] ?? plan['Node Type'] ?? '',
            (plan['Index Cond'] ?? '').includes(column),
            plan['Rows Removed by Filter'] ?? 0,
          ],
        ]
      : [];
  return [...own, ...(plan.Plans ?? []).flatMap((p) => scansOf(p, table, column))];
}

/** The indexes of `table` a plan reads. */
function indexesOn(plan: PlanNode, table: string): string[] {
  return [...indexesUsed(plan)].filter((name) => name.startsWith(table));
}

/**
 * PostgreSQL only: statements that act on one job or run find it by primary key, in the plan a prepared
 * statement settles on (generic), whatever the statistics say. A batched ack on a table never analyzed:
 * the processing index's range of leases ending after now holds an entry of every job claimed within a
 * lease, dead ones included, and an old snapshot keeps those (B12 in docs/bench.md). A job's handle
 * operations and a run's end, move or wait, after statistics taken while nothing was processing or
 * running: the processing index (queue, claimed_until) and the runs' by-state index (ns, state,
 * created_at, id) then looked free to scan, and each lookup read every job in flight or every running
 * run, parked ones included. A limited claim's rate windows, after statistics of a small windows table:
 * each claim read the window of every key of its queue.
 */
describePg('postgres lookups by primary key', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('reads the jobs it acks by primary key only, however many leases end after now', async () => {
    const s = `"${db.location}"`;
    const q = store.queue('acked');
    await q.enqueueMany([1, 2, 3]);
    const jobs = await q.claimBatch(3, 'w');
    expect(jobs).toHaveLength(3);
    // Other workers' leases of the queue, all ending long after now (no ANALYZE: the planner guesses).
    await withClient((c) =>
      c.query(
        `INSERT INTO ${s}.jobs (queue, state, payload, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at, attempts, claimed_until, claim_token)
         SELECT 'acked', 'processing', '{}', 3, 1000, 1000, 0, 0, 1, 9999999999999, gen_random_uuid() FROM generate_series(1, 20000)`,
      ),
    );
    const ack = engineSql(db.location).queue.ackBatchPlain;
    const plan = await withClient(async (c) => {
      const rows = (await c.query(`SELECT id, claim_token::text AS t FROM ${s}.jobs WHERE worker_id = 'w' ORDER BY id`))
        .rows as Array<{ id: string; t: string }>;
      expect(rows.map((r) => Number(r.id))).toEqual(jobs.map((j) => j.id));
      await c.query('SET plan_cache_mode = force_generic_plan');
      await c.query(`PREPARE acked AS ${ack.text}`);
      const args = `'acked', ARRAY[${rows.map((r) => r.id).join(',')}]::bigint[], ARRAY[${rows.map((r) => `'${r.t}'`).join(',')}]::text[]`;
      return explainAnalyzed(c, `EXECUTE acked(${args})`);
    });
    expect(indexesOn(plan, 'jobs')).toEqual(['jobs_pkey']);
    // EXPLAIN ANALYZE ran it: the three jobs are acked, the other leases untouched.
    for (const j of jobs) expect(await q.getJob(j.id)).toBeNull();
    const left = await withClient((c) =>
      c.query(`SELECT count(*)::int AS n FROM ${s}.jobs WHERE queue = 'acked' AND state = 'processing'`),
    );
    expect(left.rows[0].n).toBe(20_000);
  });

  it("reads one job by primary key for its handle's operations, with statistics of an idle queue", async () => {
    const s = `"${db.location}"`;
    const q = store.queue('handled');
    await q.enqueueMany(Array.from({ length: 5_000 }, (_, i) => i));
    const sql = engineSql(db.location).queue;
    const ops = {
      ackPlain: sql.ackPlain,
      ack: sql.ack,
      heartbeat: sql.heartbeat,
      release: sql.release,
      progress: sql.progress,
    };
    const plans = await withClient(async (c) => {
      // Statistics taken while no job was processing make the processing index look free to scan.
      await c.query(`DELETE FROM ${s}.jobs WHERE queue <> 'handled'`);
      await c.query(`ANALYZE ${s}.jobs`);
      // Then many are taken.
      await c.query(
        `UPDATE ${s}.jobs SET state = 'processing', attempts = 1, claimed_until = 9999999999999, claim_token = gen_random_uuid()
         WHERE queue = 'handled' AND id % 2 = 0`,
      );
      await c.query('SET plan_cache_mode = force_generic_plan');
      const out: [string, string[]][] = [];
      for (const [name, st] of Object.entries(ops)) {
        await c.query(`PREPARE h_${name} AS ${st.text}`);
        const params = Math.max(...[...st.text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
        const r = await c.query(`EXPLAIN (FORMAT JSON) EXECUTE h_${name}(${Array(params).fill('NULL').join(', ')})`);
        out.push([name, indexesOn((r.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan, 'jobs')]);
      }
      return out;
    });
    expect(plans).toEqual(Object.keys(ops).map((name) => [name, ['jobs_pkey']]));

    // The fence still holds: a handle acts on its own claim only.
    const [a, b] = await q.claimBatch(2, 'w');
    expect([a!.id % 2, b!.id % 2]).toEqual([1, 1]);
    expect(await a!.heartbeat(60_000)).toBe(true);
    expect(await a!.ack()).toBe(true);
    expect(await a!.ack()).toBe(false);
    expect(await store.queue('handled').getJob(b!.id)).toMatchObject({ state: 'processing' });
  });

  it("reads a limited claim's rate windows by primary key, with statistics of a small windows table", async () => {
    const s = `"${db.location}"`;
    const now = await store.now();
    const period = 3_600_000;
    const win = Math.floor(now / period) * period;
    const windows = (from: number, to: number) =>
      `INSERT INTO ${s}.key_rate_windows (queue, key, window_start, window_count)
       SELECT 'rated', 'k' || g, ${win}, 1 FROM generate_series(${from}, ${to}) AS g`;
    const seen = await withClient(async (c) => {
      // Statistics taken while the queue had one window, then a window for each of 2,000 keys, one full.
      await c.query(windows(1, 1));
      await c.query(`ANALYZE ${s}.key_rate_windows`);
      await c.query(windows(2, 2_000));
      await c.query(`UPDATE ${s}.key_rate_windows SET window_count = 5 WHERE key = 'k42'`);
      await c.query('SET plan_cache_mode = force_generic_plan');
      // The plans of the functions' own queries, as PostgreSQL logs them (auto_explain, sent to this session).
      await c.query(`LOAD 'auto_explain'`);
      await c.query(
        `SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on;
         SET auto_explain.log_analyze = on; SET auto_explain.log_format = json; SET client_min_messages = log`,
      );
      const logged: string[] = [];
      c.on('notice', (n) => logged.push(n.message ?? ''));
      const plan = async (
        sql: string,
        column: string,
      ): Promise<{ rows: unknown[]; scans: [string, boolean, number][] }> => {
        logged.length = 0;
        const r = await c.query(sql);
        const inner = logged.filter((m) => m.includes('"Query Text": "SELECT w.key'));
        return {
          rows: r.rows as unknown[],
          scans: inner.flatMap((m) =>
            scansOf((JSON.parse(m.slice(m.indexOf('{'))) as { Plan: ScanNode }).Plan, 'key_rate_windows', column),
          ),
        };
      };
      const used = await plan(
        `SELECT key, n::int FROM ${s}.key_rate_used('rated', ${win}, ARRAY['k7', 'k1500', 'k9999'])`,
        'key',
      );
      const full = await plan(`SELECT key FROM ${s}.key_rate_full('rated', ${win}, 2)`, 'window_count');
      await c.query('SET client_min_messages = notice');
      return { used, full };
    });
    // The windows of the keys asked for, each looked up by primary key: no window of another key is read.
    expect(seen.used.rows).toEqual(
      expect.arrayContaining([
        { key: 'k7', n: 1 },
        { key: 'k1500', n: 1 },
      ]),
    );
    expect(seen.used.rows).toHaveLength(2);
    expect(seen.used.scans).toEqual([['key_rate_windows_pkey', true, 0]]);
    // The full windows of the period: a range of the full-windows index by count.
    expect(seen.full.rows).toEqual([{ key: 'k42' }]);
    expect(seen.full.scans).toEqual([['key_rate_windows_window_idx', true, 0]]);
  });

  it('reads a run by primary key when it checks its state, however many runs are running', async () => {
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
           ARRAY['failed'], ARRAY[NULL]::text[], ARRAY['{"name":"Error"}'], ARRAY['w'], ARRAY[NULL]::int[],
           ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::bigint[], ARRAY[NULL]::text[], 'q', ARRAY[]::bigint[],
           'w'`,
        ],
      ];
      for (const [name, text, args] of cases) {
        await c.query(`PREPARE ${name} AS ${text}`);
        expect([name, indexesOn(await explainAnalyzed(c, `EXECUTE ${name}(${args})`), 'workflow_runs')]).toEqual([
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
