import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import type { Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { PoolExecutor } from '../../lib/engines/postgres/connection.js';
import { NOTIFY_ONLY } from '../../lib/engines/postgres/notify/own-wakes.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';

/**
 * PostgreSQL only: a pool connection settles a prepared statement on one generic plan, costed for
 * the table as it was; the executor discards its plans once they are `replanMs` old, so a plan made
 * while the jobs table was small (a whole-table scan) does not outlive the table's growth.
 */
describePg('postgres executor re-plans stale prepared statements', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  /** The plan lines (auto_explain) of a batched ack run through an executor with `replanMs`, after the table grew. */
  async function ackPlanAfterGrowth(
    queue: string,
    replanMs: number,
    on: { db: EngineDb; store: Store } = { db, store },
  ): Promise<string> {
    const { db, store } = on;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const plans: string[] = [];
    pool.on('connect', (c) => c.on('notice', (n) => void plans.push(String(n.message))));
    const exec = new PoolExecutor(pool, NOTIFY_ONLY, true, true, replanMs);
    const ack = engineSql(db.location).queue.ackBatchPlain;
    const q = store.queue(queue);
    try {
      await q.enqueueMany([1, 2]);
      const jobs = await q.claimBatch(2, 'w');
      const ids = jobs.map((j) => j.id);
      // The generic plan, as PostgreSQL settles on after a few executions when it costs no more than a
      // custom one (forced here, so the choice does not depend on the costs of the moment).
      await exec.run({ name: '', text: 'SET plan_cache_mode = force_generic_plan' }, []);
      // Ten executions on the small table: the statement's plan is settled.
      for (let i = 0; i < 10; i++) await exec.run(ack, [queue, ids, ['none', 'none']]);
      await exec.run(
        {
          name: '',
          text: `INSERT INTO "${db.location}".jobs (queue, state, payload, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at, died_at)
          SELECT '${queue}-other', 'dead', '{}', 3, 1000, 1000, 0, 0, 0 FROM generate_series(1, 50000)`,
        },
        [],
      );
      for (const set of [
        "LOAD 'auto_explain'",
        'SET auto_explain.log_min_duration = 0',
        'SET client_min_messages = log',
      ])
        await exec.run({ name: '', text: set }, []);
      await exec.run(ack, [queue, ids, ['none', 'none']]);
      exec.close();
      return plans.join('\n');
    } finally {
      await pool.end();
    }
  }

  it('without a re-plan the settled plan of a batched ack still reads the whole grown table (why the executor re-plans)', async () => {
    // The server may re-plan by itself: an invalidation reset, when concurrent DDL (other test files
    // creating schemas) overruns this backend's queue, drops every cached plan. So up to three tries,
    // each on a fresh schema (a grown table would make the first plan a good one).
    let plan = '';
    for (let i = 0; i < 3 && !/Seq Scan on jobs/.test(plan); i++) {
      const fresh = await postgres.create();
      const st = await fresh.open();
      try {
        plan = await ackPlanAfterGrowth('stale', 3_600_000, { db: fresh, store: st });
      } finally {
        await fresh.destroy();
      }
    }
    expect(plan).toMatch(/Seq Scan on jobs/);
  });

  it('with its plans discarded, the same ack reads the jobs by primary key', async () => {
    const plan = await ackPlanAfterGrowth('replanned', 0);
    expect(plan).not.toMatch(/Seq Scan on jobs/);
    expect(plan).toMatch(/jobs_pkey/);
  });
});
