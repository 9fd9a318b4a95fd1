import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource, type QueryRunner } from 'typeorm';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store, TxOpen } from '../../lib/contract/types.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { sqliteFile, type EngineDb } from '../helpers/engines.js';
import { flowsThroughJoinedTx } from '../helpers/typeorm-flows.js';
import { keyedEnqueuesThroughJoinedTx } from '../helpers/typeorm-keyed.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';

/** The TypeORM seam: store.joinTransaction runs a TypeORM transaction on TypeORM's own connection to the same file, with the store joined to it. */
describe('sqlite engine joined to a TypeORM transaction (same file)', () => {
  let db: EngineDb;
  let store: Store;
  let ds: DataSource;

  beforeAll(async () => {
    db = await sqliteFile.create();
    store = await db.open();
    ds = new DataSource({ type: 'better-sqlite3', database: db.location, entities: [] });
    await ds.initialize();
    await ds.query('CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
    await ds.query('CREATE TABLE flow_orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
  });
  afterAll(async () => {
    await ds.destroy();
    await db.destroy();
  });

  const count = async (sql: string, params: unknown[] = []): Promise<number> => {
    const rows = (await ds.query(sql, params)) as { n: number }[];
    return rows[0].n;
  };

  it("openTypeOrm refuses a SQLite DataSource's manager (its one connection is shared by every transaction) and what is not TypeORM's, at once", () => {
    expect(() => openTypeOrm(ds.manager)).toThrow(InvalidOption);
    expect(() => openTypeOrm(ds.manager)).toThrow(/openTypeOrm\(dataSource\).*one connection/);
    expect(() => openTypeOrm({} as DataSource)).toThrow(/must be a TypeORM DataSource/);
  });

  describe('a TypeORM connection on another database than the store is refused, naming both files, and nothing is written (engine-only)', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'alkstore-seam-other-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    async function refused(s: Store, other: DataSource): Promise<Error> {
      let ran = false;
      const err = await s
        .joinTransaction(openTypeOrm(other), async (tx, em) => {
          ran = true;
          await em.query('INSERT INTO orders (note) VALUES (?)', ['elsewhere']);
          await tx.outboxEnqueue('elsewhere', { n: 1 });
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidOption);
      expect(ran).toBe(false);
      return err as Error;
    }

    it('a file without alkstore tables', async () => {
      const path = join(dir, 'business.db');
      const other = new DataSource({ type: 'better-sqlite3', database: path, entities: [] });
      await other.initialize();
      try {
        await other.query('CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
        const err = await refused(store, other);
        expect(err.message).toContain(realpathSync(path));
        expect(err.message).toContain(realpathSync(db.location));
        expect(err.message).not.toContain('__alkstore_meta');
        expect(await other.query('SELECT count(*) AS n FROM orders')).toEqual([{ n: 0 }]);
        // Refused again on the next transaction: nothing was remembered of the refusal.
        await refused(store, other);
      } finally {
        await other.destroy();
      }
    });

    it("another store's file: alkstore's rows would land there", async () => {
      const path = join(dir, 'other-store.db');
      const otherStore = await openSqliteStore({ path });
      const other = new DataSource({ type: 'better-sqlite3', database: path, entities: [] });
      await other.initialize();
      try {
        await other.query('CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
        const err = await refused(store, other);
        expect(err.message).toContain(realpathSync(path));
        expect((await otherStore.outbox('elsewhere').queue.stats()).pending).toBe(0);
        expect((await store.outbox('elsewhere').queue.stats()).pending).toBe(0);
      } finally {
        await other.destroy();
        await otherStore.close();
      }
    });

    it('an in-memory store, which no other connection can reach', async () => {
      const memory = await openSqliteStore({ path: ':memory:' });
      try {
        const err = await refused(memory, ds);
        expect(err.message).toMatch(/the store is in memory/);
        expect(err.message).toContain(realpathSync(db.location));
        expect(await count("SELECT count(*) AS n FROM orders WHERE note = 'elsewhere'")).toBe(0);
      } finally {
        await memory.close();
      }
    });
  });

  it('keyed enqueues (uniqueKey, orderingKey, headers) work through the joined transaction as through the store', () =>
    keyedEnqueuesThroughJoinedTx(ds, store));

  it('a flow (tx.enqueueFlow, tx.enqueue with dependsOn) commits with the business row, a rollback leaves none of it, a bad flow is refused before any write', () =>
    flowsThroughJoinedTx(ds, store, {
      insert: (em, note) => em.query('INSERT INTO flow_orders (note) VALUES (?)', [note]),
      count: async (note) => count('SELECT count(*) AS n FROM flow_orders WHERE note = ?', [note]),
    }));

  it('drops the job, event, notify and offset save on rollback', async () => {
    const marker = store.listen('rb-marker');
    const rolledBack = store.listen('rb-notify');
    const queueWake = store.queue('rb-queue').listen();
    await expect(
      store.joinTransaction(openTypeOrm(ds), async (tx, em) => {
        await em.query('INSERT INTO orders (note) VALUES (?)', ['rolled back']);
        await tx.enqueue('rb-queue', { order: 1 });
        await tx.publish('rb-stream', { order: 1 });
        await tx.publishWithKey('rb-stream', 'k', { order: 1 });
        await tx.notify('rb-notify');
        await tx.saveOffset('rb-stream', 'consumer', 1);
        throw new Error('business failure');
      }),
    ).rejects.toThrow('business failure');
    expect(await count('SELECT count(*) AS n FROM orders')).toBe(0);
    expect(await store.queue('rb-queue').stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    expect(await store.stream('rb-stream').readSince(0)).toEqual([]);
    expect(await store.stream('rb-stream').getOffset('consumer')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM __alkstore_notify WHERE channel = ?', ['rb-notify'])).toBe(0);
    // A later commit wakes its own channel; by then the watcher has seen everything before it: nothing from the rollback.
    await store.joinTransaction(openTypeOrm(ds), (tx) => tx.notify('rb-marker'));
    expect(await marker.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'rb-marker' });
    expect(await rolledBack.recv(AbortSignal.abort())).toBeNull();
    expect(await queueWake.recv(AbortSignal.abort())).toBeNull();
    for (const r of [marker, rolledBack, queueWake]) r.close();
  });

  it("wakes another store's listener at once when TypeORM commits, without waiting for its poll (the wake file)", async () => {
    // Polling every 10 minutes: only the poke after the joined commit can deliver within the deadline.
    const slow = await openSqliteStore({ path: db.location, wakeFallbackMs: 600_000 });
    try {
      const wake = slow.queue('poked-by-orm').listen();
      await store.joinTransaction(openTypeOrm(ds), async (tx, em) => {
        await em.query('INSERT INTO orders (note) VALUES (?)', ['poked']);
        return tx.enqueue('poked-by-orm', { n: 1 });
      });
      expect(await wake.recv(AbortSignal.timeout(20_000))).toEqual({ channel: wake.channel });
      wake.close();
    } finally {
      await slow.close();
    }
  });

  it('makes the job claimable and wakes a listener when TypeORM commits', async () => {
    const q = store.queue('commit-queue', { maxAttempts: 7 });
    const wake = q.listen();
    const events = store.stream('commit-stream').subscribe('reader');
    const id = await store.joinTransaction(openTypeOrm(ds), async (tx, em) => {
      await em.query('INSERT INTO orders (note) VALUES (?)', ['committed']);
      await tx.publishWithKey('commit-stream', 'order-1', { order: 1 });
      await tx.saveOffset('commit-stream', 'other', 1);
      return tx.enqueue('commit-queue', { order: 1 });
    });
    expect(await wake.recv(AbortSignal.timeout(10_000))).toEqual({ channel: '__alkstore_queue:commit-queue' });
    const job = await q.claimOne('w');
    expect(job?.id).toBe(id);
    expect(job?.payload).toEqual({ order: 1 });
    expect(job?.maxAttempts).toBe(7); // the opts registered by store.queue(name, opts) apply to tx.enqueue
    expect(await job!.ack()).toBe(true);
    const e = await events.next(AbortSignal.timeout(10_000));
    expect(e).toMatchObject({ offset: 1, stream: 'commit-stream', key: 'order-1', payload: { order: 1 } });
    expect(await store.stream('commit-stream').getOffset('other')).toBe(1);
    wake.close();
    events.close();
  });

  it('joins a QueryRunner transaction through an open of its own (any ORM shaped like one joins this way)', async () => {
    const openQueryRunner: TxOpen<QueryRunner> = async (body) => {
      const qr = ds.createQueryRunner();
      await qr.connect();
      await qr.startTransaction();
      try {
        const r = await body({ queryRunner: qr, handle: qr });
        await qr.commitTransaction();
        return r;
      } catch (err) {
        await qr.rollbackTransaction();
        throw err;
      } finally {
        await qr.release();
      }
    };
    const id = await store.joinTransaction(openQueryRunner, (tx) => tx.outboxEnqueue('mails', { to: 'a@b.c' }));
    const info = await store.outbox('mails').queue.getJob(id);
    expect(info).toMatchObject({
      state: 'pending',
      maxAttempts: 5,
      visibilityTimeoutMs: 60_000,
      payload: { to: 'a@b.c' },
    });
  });

  it('lets workers claim and ack while a TypeORM transaction is open: they wait, then complete after its commit', async () => {
    const q = store.queue('busy-queue');
    await q.enqueueMany([1, 2, 3]);
    const held = await q.claimOne('w');
    let settled = 0;
    const work: Promise<unknown>[] = [];
    let started!: () => void;
    const inside = new Promise<void>((r) => (started = r));
    const business = store.joinTransaction(openTypeOrm(ds), async (tx, em) => {
      await em.query('INSERT INTO orders (note) VALUES (?)', ['holds the write lock']);
      started();
      // Keep the transaction open across event-loop turns; TypeORM's own statements still run.
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 5));
        await em.query('INSERT INTO orders (note) VALUES (?)', [`more ${i}`]);
      }
      await tx.enqueue('busy-queue', 'from the business transaction');
      // The write path is the transaction's until commit, so none of the store's own writes can have landed yet.
      expect(settled).toBe(0);
    });
    // The workers' writes come from outside the transaction (another request, a worker loop).
    await inside;
    work.push(held!.ack().finally(() => settled++));
    work.push(q.claimOne('w').finally(() => settled++));
    work.push(q.enqueue(4).finally(() => settled++));
    await business;
    const [acked, claimed, enqueued] = await Promise.all(work);
    expect(acked).toBe(true);
    expect(claimed).not.toBeNull();
    expect(typeof enqueued).toBe('number');
    expect(await q.stats()).toMatchObject({ pending: 3, processing: 1 });
    expect(await count('SELECT count(*) AS n FROM orders')).toBeGreaterThanOrEqual(21);
  });
});
