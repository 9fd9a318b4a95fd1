import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { Closed } from '../../lib/contract/errors.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';
import { recordingLogger } from './pg-helpers.js';

describePg('postgres with a caller-owned pool', () => {
  let db: EngineDb;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await postgres.create();
    pool = new pg.Pool({ connectionString: PG_URL, max: 3 });
  });
  afterAll(async () => {
    await pool.end();
    await db.destroy();
  });

  it('runs on the pool, listens on its own connection, and leaves the pool open on close', async () => {
    const store = await openPostgresStore({ pool, schema: db.location });
    const writer = await db.open();
    const wakes = store.queue('pooled').listen();
    await writer.queue('pooled').enqueue({ via: 'writer' });
    expect(await wakes.recv(AbortSignal.timeout(15_000))).toEqual({ channel: wakes.channel });
    expect((await store.queue('pooled').claimOne('w'))?.payload).toEqual({ via: 'writer' });
    await store.close();
    await expect(store.now()).rejects.toBeInstanceOf(Closed);
    expect(wakes.closed).toBe(true);
    // The caller's pool is still usable.
    expect((await pool.query('SELECT 1 AS one')).rows[0].one).toBe(1);
  });

  it('when the LISTEN connection cannot be opened, the store says so once and wakes receivers by polling', async () => {
    // The pool reaches the server through its Client class; the listener, built from the pool's
    // options (port 1), cannot: exactly a LISTEN-less deployment.
    const url = new URL(PG_URL);
    class Reachable extends pg.Client {
      constructor(config?: pg.ClientConfig) {
        super({ ...config, connectionString: PG_URL });
      }
    }
    const unreachable = new pg.Pool({
      host: url.hostname,
      port: 1,
      user: 'postgres',
      database: url.pathname.slice(1),
      max: 2,
      Client: Reachable,
    });
    const logger = recordingLogger();
    const store = await openPostgresStore({ pool: unreachable, schema: db.location, wakeFallbackMs: 50, logger });
    try {
      expect(logger.lines.filter((l) => l.includes('LISTEN'))).toHaveLength(1);
      const writer = await db.open();
      const sub = store.stream('no-listen').subscribe('c');
      await writer.stream('no-listen').publish({ seen: true });
      expect((await sub.next(AbortSignal.timeout(15_000)))?.payload).toEqual({ seen: true });
      sub.close();
      const wakes = store.listen('anything');
      expect(await wakes.recv(AbortSignal.timeout(15_000))).toEqual({ channel: 'anything' });
      wakes.close();
    } finally {
      await store.close();
      await unreachable.end();
    }
  });

  it('two stores on different schemas can share one pool (prepared statement names never collide)', async () => {
    const other = await postgres.create();
    try {
      const a = await openPostgresStore({ pool, schema: db.location });
      const b = await openPostgresStore({ pool, schema: other.location });
      for (let i = 0; i < 5; i++) {
        await a.queue('shared-name').enqueue({ store: 'a', i });
        await b.queue('shared-name').enqueue({ store: 'b', i });
      }
      expect(
        (await a.queue('shared-name').claimBatch(10, 'w')).map((j) => (j.payload as { store: string }).store),
      ).toEqual(Array(5).fill('a'));
      expect(
        (await b.queue('shared-name').claimBatch(10, 'w')).map((j) => (j.payload as { store: string }).store),
      ).toEqual(Array(5).fill('b'));
      await a.close();
      await b.close();
    } finally {
      await other.destroy();
    }
  });
  it('twelve stores over one caller pool leave one error listener on its connection, not one per store', async () => {
    const one = new pg.Pool({ connectionString: PG_URL, max: 1 });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const stores = [];
    try {
      const baseline = await (async () => {
        const c = await one.connect();
        const n = c.listenerCount('error');
        c.release();
        return n;
      })();
      for (let i = 0; i < 12; i++) {
        const store = await openPostgresStore({ pool: one, schema: db.location, listen: false });
        stores.push(store);
        // Engine-owned transactions check the pool's only connection out: every store uses the same client.
        await store.withTx((tx) => tx.enqueue('listeners', { i }));
      }
      const c = await one.connect();
      const after = c.listenerCount('error');
      c.release();
      expect(after).toBe(baseline + 1);
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      for (const s of stores) await s.close();
      await one.end();
    }
  });
});
