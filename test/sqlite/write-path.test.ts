import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { Database, InvalidOption, TransactionInProgress, TransactionTimeout } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { openTx } from '../helpers/open-tx.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';

/**
 * SQLite only: one write connection per store, so an application transaction
 * holds the store's whole write path across its awaits. What the write path
 * does about it: a deadline on every wait, a plain write inside the
 * transaction refused at once, a lease renewal never held back more than a
 * quarter of its lease, and a savepoint per transactional operation.
 */
describe('sqlite write path beside application transactions (engine-only)', () => {
  let dir: string;
  let path: string;
  let store: Store;
  let ds: DataSource;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'alkstore-write-path-'));
    path = join(dir, 'app.db');
    store = await openSqliteStore({ path, lockWaitTimeoutMs: 300 });
    ds = new DataSource({ type: 'better-sqlite3', database: path, entities: [] });
    await ds.initialize();
    await ds.query('CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
  });
  afterAll(async () => {
    await ds.destroy();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const orders = async (note: string): Promise<number> =>
    ((await ds.query('SELECT count(*) AS n FROM orders WHERE note = ?', [note])) as { n: number }[])[0].n;

  it('refuses to join a transaction TypeORM opened by itself (openTypeOrm(em)), naming the DataSource form, and the business row rolls back with it', async () => {
    const err = await ds
      .transaction(async (em) => {
        await em.query('INSERT INTO orders (note) VALUES (?)', ['raw']);
        await store.joinTransaction(openTypeOrm(em), (tx) => tx.enqueue('raw', 1));
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidOption);
    expect((err as Error).message).toMatch(/openTypeOrm\(dataSource\)/);
    expect(await store.queue('raw').stats()).toMatchObject({ pending: 0 });
    expect(await orders('raw')).toBe(0);
  });

  it('refuses a plain write of the same store inside joinTransaction at once, naming tx.enqueue', async () => {
    const q = store.queue('inside');
    const err = await store
      .joinTransaction(openTypeOrm(ds), async (tx, em) => {
        await em.query('INSERT INTO orders (note) VALUES (?)', ['inside-join']);
        await q.enqueue({ plain: true });
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionInProgress);
    expect((err as Error).message).toMatch(/tx\.enqueue/);
    expect((err as Error).message).toMatch(/joinTransaction/);
    expect(await orders('inside-join')).toBe(0);
    expect(await q.stats()).toMatchObject({ pending: 0 });
  });

  it('refuses a plain write inside withTx(fn) at once too; after the transaction ends, a write started inside it goes through', async () => {
    const q = store.queue('inside-fn');
    let later: Promise<number> | null = null;
    const err = await store
      .withTx(async (tx) => {
        await tx.enqueue('inside-fn', 'in the transaction');
        // Started inside, run after the commit: the context outlives the transaction, the refusal does not.
        later = new Promise<number>((resolve, reject) =>
          setTimeout(() => q.enqueue('after').then(resolve, reject), 50),
        );
        await q.enqueue('plain');
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransactionInProgress);
    expect((err as Error).message).toMatch(/withTx\(fn\)/);
    expect(typeof (await later!)).toBe('number');
    expect((await q.claimBatch(10, 'w')).map((j) => j.payload)).toEqual(['after']);
  });

  it('a write waiting for an open withTx(fn) fails after lockWaitTimeoutMs, naming that transaction; the transaction still commits', async () => {
    const tx = await openTx(store);
    await tx.enqueue('waits', 1);
    const err = await store
      .queue('waits')
      .enqueue(2)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Database);
    expect((err as Error).message).toMatch(/held by the withTx\(fn\) transaction opened \d+ ms ago and still open/);
    await tx.commit();
    expect(await store.queue('waits').stats()).toMatchObject({ pending: 1 });
  });

  it('a lease renewal waiting for a withTx(fn) rolls it back after a quarter of the lease, and lands', async () => {
    const q = store.queue('renew-withTx');
    await q.enqueue('job');
    const job = (await q.claimOne('w', { leaseMs: 2_000 }))!;
    const tx = await openTx(store);
    await tx.enqueue('renew-withTx', 'rolled back');
    const asked = performance.now();
    expect(await job.heartbeat(800)).toBe(true);
    const waited = performance.now() - asked;
    // It waited its quarter of 800 ms first (without the roll back it would fail after the 300 ms lock wait).
    expect(waited).toBeGreaterThanOrEqual(150);
    await expect(tx.enqueue('renew-withTx', 'after')).rejects.toBeInstanceOf(TransactionTimeout);
    await expect(tx.commit()).rejects.toBeInstanceOf(TransactionTimeout);
    expect(await q.stats()).toMatchObject({ pending: 0, processing: 1 });
    expect(await job.ack()).toBe(true);
  });

  it('a lease renewal waiting for a joined TypeORM transaction rolls it back whole: no business row, no message, and the renewal lands', async () => {
    const q = store.queue('renew-join');
    await q.enqueue('job');
    const job = (await q.claimOne('w', { leaseMs: 2_000 }))!;
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    let afterRevoke: unknown = null;
    const business = store
      .joinTransaction(openTypeOrm(ds), async (tx, em) => {
        await em.query('INSERT INTO orders (note) VALUES (?)', ['revoked-before']);
        await tx.outboxEnqueue('renew-join-out', { n: 1 });
        inside();
        await new Promise((r) => setTimeout(r, 400));
        // Rolled back meanwhile: the ORM's later writes land in a fresh transaction that rolls back too.
        await em.query('INSERT INTO orders (note) VALUES (?)', ['revoked-after']);
        afterRevoke = await tx.outboxEnqueue('renew-join-out', { n: 2 }).catch((e: unknown) => e);
      })
      .catch((e: unknown) => e);
    await entered;
    // The transaction sleeps past the 300 ms lock wait: the renewal lands only because it was rolled back.
    expect(await job.heartbeat(400)).toBe(true);
    const err = await business;
    expect(err).toBeInstanceOf(TransactionTimeout);
    expect(afterRevoke).toBeInstanceOf(TransactionTimeout);
    expect(await orders('revoked-before')).toBe(0);
    expect(await orders('revoked-after')).toBe(0);
    expect(await store.outbox('renew-join-out').queue.stats()).toMatchObject({ pending: 0 });
    expect(await job.ack()).toBe(true);
  });

  it('a transactional operation that fails halfway leaves nothing of itself; the transaction commits the rest', async () => {
    // A real trigger refuses one event row after its stream head was advanced in the same operation.
    await ds.query(
      `CREATE TRIGGER refuse_event BEFORE INSERT ON __alkstore_events WHEN NEW.payload = '"boom"' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`,
    );
    try {
      await store.withTx(async (tx) => {
        await expect(tx.publish('half', 'boom')).rejects.toThrow(/refused by the test/);
        expect(await tx.publish('half', 'ok')).toBe(1);
      });
      await store.joinTransaction(openTypeOrm(ds), async (tx, em) => {
        await em.query('INSERT INTO orders (note) VALUES (?)', ['joined-half']);
        await expect(tx.publish('half', 'boom')).rejects.toThrow(/refused by the test/);
        expect(await tx.publish('half', 'ok too')).toBe(2);
      });
    } finally {
      await ds.query('DROP TRIGGER refuse_event');
    }
    expect((await store.stream('half').readSince(0)).map((e) => [e.offset, e.payload])).toEqual([
      [1, 'ok'],
      [2, 'ok too'],
    ]);
    expect(await orders('joined-half')).toBe(1);
  });
});
