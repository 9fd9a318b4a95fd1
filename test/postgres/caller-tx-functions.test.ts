import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import type { QueryRunnerLike, Store, TxOps } from '../../lib/contract/types.js';
import { type EngineDb, PG_URL, describePg, postgres, waitFor } from '../helpers/engines.js';

/**
 * joinTransaction over a caller's raw `pg` client transaction: enqueue/outboxEnqueue and
 * publish go through the engine's plpgsql functions (migration 2) instead of
 * the prepared statements the store uses on its own pool. Both paths must give
 * the same rows, instants, offsets and commit-only wakes.
 */
describePg('postgres joinTransaction(caller pg client): enqueue and publish functions', () => {
  let db: EngineDb;
  let store: Store;
  const clients: pg.Client[] = [];

  async function callerTx(): Promise<{ client: pg.Client; runner: QueryRunnerLike & { active: boolean } }> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    clients.push(client);
    const runner = {
      active: false,
      get isTransactionActive(): boolean {
        return this.active;
      },
      query: (sql: string, params?: unknown[]) => client.query(sql, params),
    };
    return { client, runner };
  }

  /** The caller's transaction on `runner`, joined through an open that hands it over as it is (any ORM can). */
  const joined = <T>(runner: QueryRunnerLike, fn: (ops: TxOps) => Promise<T>): Promise<T> =>
    store.joinTransaction((body) => body({ queryRunner: runner, handle: runner }), fn);

  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await db.destroy();
  });

  it('stamps a job exactly like queue.enqueue does (options, clock, defaults of the registered queue)', async () => {
    store.queue('fn-q', {
      maxAttempts: 7,
      leaseMs: 4_000,
      backoffBaseMs: 50,
      deadLetterRetentionMs: 9_000,
    });
    const { client, runner } = await callerTx();
    const before = await store.now();
    await client.query('BEGIN');
    runner.active = true;
    const { plain, delayed, at, mail } = await joined(runner, async (ops) => ({
      plain: await ops.enqueue('fn-q', { a: 1 }),
      delayed: await ops.enqueue('fn-q', { a: 2 }, { delayMs: 60_000, priority: 4, expiresInMs: 120_000 }),
      at: await ops.enqueue('fn-q', { a: 3 }, { runAt: before + 30_000, maxAttempts: 2 }),
      mail: await ops.outboxEnqueue('fn-mail', 'hello'),
    }));
    await client.query('COMMIT');
    runner.active = false;
    const after = await store.now();

    const q = store.queue('fn-q');
    const p = (await q.getJob(plain))!;
    expect(p).toMatchObject({
      state: 'pending',
      payload: { a: 1 },
      priority: 0,
      attempts: 0,
      maxAttempts: 7,
      visibilityTimeoutMs: 4_000,
      backoffBaseMs: 50,
      deadLetterRetentionMs: 9_000,
      expiresAt: null,
    });
    expect(p.enqueuedAt).toBeGreaterThanOrEqual(before);
    expect(p.enqueuedAt).toBeLessThanOrEqual(after);
    expect(p.runAt).toBe(p.enqueuedAt);
    const d = (await q.getJob(delayed))!;
    expect(d).toMatchObject({ priority: 4, payload: { a: 2 } });
    expect(d.runAt).toBe(d.enqueuedAt + 60_000);
    expect(d.expiresAt).toBe(d.enqueuedAt + 120_000);
    const a = (await q.getJob(at))!;
    expect(a).toMatchObject({ runAt: before + 30_000, maxAttempts: 2 });
    expect(await store.outbox('fn-mail').queue.getJob(mail)).toMatchObject({
      payload: 'hello',
      maxAttempts: 5,
      visibilityTimeoutMs: 60_000,
    });
    // Ready now: the plain job is the one a claim hands out.
    expect((await q.claimOne('w'))?.id).toBe(plain);
  });

  it('wakes the queue and the stream on commit only, and a rollback leaves nothing', async () => {
    const { client, runner } = await callerTx();
    const qWake = store.queue('fn-wake').listen();
    // A subscriber waiting at the tail returns only after a stream wake (LISTEN is healthy: no polling).
    const rx = store.stream('fn-wake-s').subscribe('fn-sub');
    try {
      await client.query('BEGIN');
      runner.active = true;
      await joined(runner, async (ops) => {
        await ops.enqueue('fn-wake', 1);
        await ops.publish('fn-wake-s', 1);
      });
      await client.query('ROLLBACK');
      runner.active = false;
      expect(await store.queue('fn-wake').stats()).toMatchObject({ pending: 0 });
      expect(await store.stream('fn-wake-s').readSince(0)).toEqual([]);

      const delivered = rx.next(AbortSignal.timeout(15_000));
      await client.query('BEGIN');
      runner.active = true;
      const { id, offset } = await joined(runner, async (ops) => ({
        id: await ops.enqueue('fn-wake', 2),
        offset: await ops.publish('fn-wake-s', { n: 2 }),
      }));
      // Not committed: a wake now would be a lie.
      const early = await qWake.recv(AbortSignal.timeout(200));
      expect(early).toBeNull();
      await client.query('COMMIT');
      runner.active = false;
      expect(await qWake.recv(AbortSignal.timeout(10_000))).not.toBeNull();
      expect(await delivered).toMatchObject({ offset: 1, payload: { n: 2 } });
      expect((await store.queue('fn-wake').claimOne('w'))?.id).toBe(id);
      // The rolled-back publish took no offset: the first committed event is offset 1.
      expect(offset).toBe(1);
      expect((await store.stream('fn-wake-s').readSince(0)).map((e) => e.payload)).toEqual([{ n: 2 }]);
    } finally {
      qWake.close();
      rx.close();
    }
  });

  it('gives gapless offsets in commit order when caller transactions and the store publish concurrently', async () => {
    const stream = 'fn-order';
    const txs = await Promise.all([callerTx(), callerTx(), callerTx()]);
    const perWriter = 20;
    await Promise.all([
      ...txs.map(async ({ client, runner }, w) => {
        for (let i = 0; i < perWriter; i++) {
          await client.query('BEGIN');
          runner.active = true;
          await joined(runner, (ops) => ops.publishWithKey(stream, `w${w}`, { w, i }));
          await client.query('COMMIT');
          runner.active = false;
        }
      }),
      (async () => {
        for (let i = 0; i < perWriter; i++) await store.stream(stream).publish({ w: 'store', i });
      })(),
    ]);
    const total = perWriter * (txs.length + 1);
    const events = await waitFor('all events', async () => {
      const e = await store.stream(stream).readSince(0, 1000);
      return e.length === total ? e : null;
    });
    expect(events.map((e) => e.offset)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    for (let w = 0; w < txs.length; w++) {
      const mine = events.filter((e) => e.key === `w${w}`).map((e) => (e.payload as { i: number }).i);
      expect(mine).toEqual(Array.from({ length: perWriter }, (_, i) => i));
    }
  });
});
