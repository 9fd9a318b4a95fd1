import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type pg from 'pg';
import type { Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';
import { explainAnalyzed, pagesOf, withClient } from './pg-helpers.js';
import { openTx } from '../helpers/open-tx.js';

/**
 * PostgreSQL only (migrations 15 and 16): `stats()` and the fold read only the counter rows the newest
 * fold could not see (and `stats()` runs with JIT off), so the dead rows of the deltas folded before cost them nothing, even while an
 * old snapshot or an idle transaction that wrote keeps those rows; and counts stay exact across a
 * fold that a transaction spans, however old its transaction id.
 */
describePg('postgres counters read from the last fold', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  const fold = (c: pg.Client, queue: string) => c.query(`SELECT "${db.location}".fold_queue_counts($1)`, [queue]);

  it('a stats() read skips the deltas folded before, dead rows kept by a held snapshot included', async () => {
    const s = `"${db.location}"`;
    const q = store.queue('floor');
    await q.enqueueMany([1, 2, 3]);
    const [job] = await q.claimBatch(1, 'w');
    await withClient(async (holder) => {
      // An old snapshot holds the xmin horizon: nothing folded from here on can be removed.
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query(`SELECT count(*) FROM ${s}.queue_counts`);
      await withClient(async (c) => {
        for (let i = 0; i < 5; i++) {
          await c.query(
            `INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n) SELECT 'floor', 'pending', 0, 0 FROM generate_series(1, 10000)`,
          );
          await fold(c, 'floor');
        }
        const dead = await c.query(`SELECT count(*)::int AS n FROM ${s}.queue_counts`);
        expect(dead.rows[0].n).toBeLessThan(10);
        const stats = engineSql(db.location).queue.stats;
        // Once first: the engine function plans its query on its first call in a session (catalog pages).
        await c.query(stats.text, ['floor']);
        const plan = await explainAnalyzed(c, stats.text, ['floor']);
        // All 50,000 dead rows would be a few hundred pages; from the floor on, a handful.
        expect(pagesOf(plan)).toBeLessThan(60);
      });
      await holder.query('COMMIT');
    });
    const st = await q.stats();
    expect({ pending: st.pending, processing: st.processing }).toEqual({ pending: 2, processing: 1 });
    await job!.ack();
  });

  it('an idle transaction that wrote (a transaction id, no snapshot) does not keep stats() reading the deltas folded since', async () => {
    const s = `"${db.location}"`;
    const q = store.queue('idle-writer');
    await q.enqueueMany([1, 2, 3]);
    await withClient(async (c) => c.query(`CREATE TABLE IF NOT EXISTS ${s}.side (id int PRIMARY KEY)`));
    await withClient(async (holder) => {
      // Idle in transaction after a write: it holds the horizon by its transaction id.
      await holder.query('BEGIN');
      await holder.query(`INSERT INTO ${s}.side (id) VALUES (1)`);
      await withClient(async (c) => {
        for (let i = 0; i < 5; i++) {
          await c.query(
            `INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n) SELECT 'idle-writer', 'pending', 0, 0 FROM generate_series(1, 10000)`,
          );
          await fold(c, 'idle-writer');
        }
        const stats = engineSql(db.location).queue.stats;
        await c.query(stats.text, ['idle-writer']);
        const plan = await explainAnalyzed(c, stats.text, ['idle-writer']);
        // Migration 15's floor stayed at the idle transaction: all 50,000 dead rows, a few hundred pages.
        expect(pagesOf(plan)).toBeLessThan(60);
      });
      await holder.query('ROLLBACK');
    });
    expect((await q.stats()).pending).toBe(3);
  });

  it('a transaction whose id is older than several folds, and that enqueues only then, is counted', async () => {
    const q = store.queue('late');
    await q.enqueue('first');
    const tx = await openTx(store);
    // Its transaction id is taken now (a write of another queue), its delta of this queue comes later.
    await tx.enqueue('late-other', 'x');
    await withClient(async (c) => {
      for (let i = 0; i < 3; i++) {
        await q.enqueue(`between ${i}`);
        await fold(c, 'late');
      }
    });
    await tx.enqueue('late', 'from the old transaction');
    expect((await q.stats()).pending).toBe(4);
    await tx.commit();
    expect((await q.stats()).pending).toBe(5);
    await withClient(async (c) => {
      await fold(c, 'late');
      await fold(c, 'late');
    });
    expect((await q.stats()).pending).toBe(5);
    expect((await store.queue('late-other').stats()).pending).toBe(1);
  });

  it('a fold in a transaction that already has its id keeps the delta that transaction writes after it', async () => {
    const s = `"${db.location}"`;
    const q = store.queue('own');
    await q.enqueueMany([1, 2]);
    await withClient(async (c) => {
      await c.query('BEGIN');
      // The transaction id first, then one statement whose fold runs before its own delta is written.
      await c.query(
        `INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n) VALUES ('own-other', 'pending', 0, 1)`,
      );
      await c.query(`WITH d AS (INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n) VALUES ('own', 'pending', 0, 5) RETURNING 1)
        SELECT ${s}.fold_queue_counts('own'), (SELECT count(*) FROM d)`);
      await c.query('COMMIT');
      await fold(c, 'own');
    });
    // The two jobs and the delta of 5 (a counter row only, as a test can write it).
    expect((await q.stats()).pending).toBe(7);
  });

  it('stats() plans its query with JIT off, even in a session that would compile every statement', async () => {
    const q = store.queue('nojit');
    await q.enqueueMany([1, 2]);
    await withClient(async (c) => {
      expect((await c.query('SELECT pg_jit_available() AS ok')).rows[0].ok).toBe(true);
      // auto_explain reports each plan to this client, nested statements included (the function's own).
      const plans: string[] = [];
      c.on('notice', (n) => plans.push(n.message ?? ''));
      await c.query("LOAD 'auto_explain'");
      for (const set of [
        'auto_explain.log_min_duration = 0',
        'auto_explain.log_nested_statements = on',
        'auto_explain.log_analyze = on',
        'client_min_messages = log',
        'jit_above_cost = 0',
      ])
        await c.query(`SET ${set}`);
      await c.query(`SELECT count(*) FROM "${db.location}".jobs`);
      expect(plans.some((p) => p.includes('JIT:'))).toBe(true); // the session does compile
      plans.length = 0;
      const r = await c.query(engineSql(db.location).queue.stats.text, ['nojit']);
      expect(Number(r.rows[0].pending)).toBe(2);
      const inner = plans.filter((p) => p.includes('queue_counts'));
      expect(inner.length).toBeGreaterThan(0);
      expect(inner.filter((p) => p.includes('JIT:'))).toEqual([]);
    });
  });

  it('an enqueue whose transaction spans a fold is counted, before and after the next fold', async () => {
    const q = store.queue('span');
    await q.enqueue('before');
    const tx = await openTx(store);
    await tx.enqueue('span', 'inside');
    await withClient((c) => fold(c, 'span'));
    expect((await q.stats()).pending).toBe(1);
    await tx.commit();
    expect((await q.stats()).pending).toBe(2);
    await withClient(async (c) => {
      await fold(c, 'span');
      await fold(c, 'span');
    });
    expect((await q.stats()).pending).toBe(2);
    const jobs = await q.claimBatch(5, 'w');
    expect(jobs).toHaveLength(2);
    expect(await q.ackBatch(jobs)).toBe(2);
    await withClient((c) => fold(c, 'span'));
    const st = await q.stats();
    expect({ pending: st.pending, processing: st.processing }).toEqual({ pending: 0, processing: 0 });
  });
});
