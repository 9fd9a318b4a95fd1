import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';
import { type PlanNode, explainAnalyzed, indexesUsed, withClient } from './pg-helpers.js';

function jobsIndexes(plan: PlanNode): string[] {
  return [...indexesUsed(plan)].filter((name) => name.startsWith('jobs'));
}

/**
 * PostgreSQL only: a batched ack finds its rows by primary key, in the plan a prepared statement
 * settles on (generic) and on a table never analyzed. The processing index's range of leases ending
 * after now holds an entry of every job claimed within a lease, dead ones included, and an old
 * snapshot keeps those (B12 in docs/bench.md).
 */
describePg('postgres batched ack plan', () => {
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
    expect(jobsIndexes(plan)).toEqual(['jobs_pkey']);
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
        out.push([name, jobsIndexes((r.rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan)]);
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
});
