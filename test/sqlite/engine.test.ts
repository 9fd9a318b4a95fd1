import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AlkstoreError, Closed, Database as DatabaseError, InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { openConnection } from '../../lib/engines/sqlite/connection.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { NotifyPruner } from '../../lib/engines/sqlite/notify/notify.sql.js';
import { SCHEMA_VERSION } from '../../lib/engines/sqlite/migrations.js';
import { sqliteFile, waitFor, type EngineDb } from '../helpers/engines.js';
import { refusal } from '../helpers/typed-errors.js';
import { openTx } from '../helpers/open-tx.js';

describe('sqlite engine: file, options and lifecycle', () => {
  let db: EngineDb;
  let store: Store;

  beforeAll(async () => {
    db = await sqliteFile.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('puts the file in WAL mode and creates only __alkstore_* tables', () => {
    const raw = new Database(db.location, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      const names = raw
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .pluck()
        .all() as string[];
      expect(names.length).toBeGreaterThan(0);
      expect(names.every((n) => n.startsWith('__alkstore_'))).toBe(true);
    } finally {
      raw.close();
    }
  });

  it('wakes a listener on a commit made by a plain better-sqlite3 connection (data_version watcher)', async () => {
    const r = store.listen('raw-commit');
    const raw = new Database(db.location);
    try {
      raw.prepare("INSERT INTO __alkstore_notify (channel, created_at) VALUES ('raw-commit', 0)").run();
      expect(await r.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'raw-commit' });
    } finally {
      raw.close();
      r.close();
    }
  });

  it('starts a listener from now: a commit before listen() does not wake it', async () => {
    const early = store.listen('from-now-marker');
    await store.notify('from-now');
    const late = store.listen('from-now');
    await store.notify('from-now-marker');
    expect(await early.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'from-now-marker' });
    expect(await late.recv(AbortSignal.abort())).toBeNull();
    early.close();
    late.close();
  });

  it('waits asynchronously for a write lock held by another connection, then fails with Database after lockWaitTimeoutMs', async () => {
    const impatient = await openSqliteStore({ path: db.location, lockWaitTimeoutMs: 300 });
    const raw = new Database(db.location);
    try {
      raw.exec('BEGIN IMMEDIATE');
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const err = await impatient
        .queue('locked')
        .enqueue(1)
        .catch((e: unknown) => e);
      clearInterval(timer);
      expect(err).toBeInstanceOf(AlkstoreError);
      expect((err as AlkstoreError).code).toBe('DATABASE');
      expect(String((err as Error).message)).toMatch(/locked/);
      expect(ticks).toBeGreaterThan(0); // the event loop kept running while it waited
      raw.exec('ROLLBACK');
      expect(await impatient.queue('locked').enqueue(2)).toBeGreaterThan(0);
    } finally {
      if (raw.inTransaction) raw.exec('ROLLBACK');
      raw.close();
      await impatient.close();
    }
  });

  it('refuses a file written by a newer schema version', async () => {
    const raw = new Database(db.location);
    raw.prepare("UPDATE __alkstore_meta SET value = ? WHERE key = 'schema_version'").run(SCHEMA_VERSION + 1);
    raw.close();
    try {
      await expect(openSqliteStore({ path: db.location })).rejects.toThrow(/schema version/);
    } finally {
      const fix = new Database(db.location);
      fix.prepare("UPDATE __alkstore_meta SET value = ? WHERE key = 'schema_version'").run(SCHEMA_VERSION);
      fix.close();
    }
  });

  it('adds the queue counters of step 4 to a file without them, counting the jobs already there', async () => {
    const old = await sqliteFile.create();
    try {
      const s1 = await old.open();
      const q = s1.queue('upgrade');
      await q.enqueueMany([1, 2, 3]);
      await q.enqueue('later', { delayMs: 600_000 });
      await (await q.claimOne('w'))!.fail('x');
      await s1.close();
      // What a build without step 4 left (its version may already be past 4): no counters, no triggers.
      const raw = new Database(old.location);
      for (const t of [
        '__alkstore_jobs_count_insert',
        '__alkstore_jobs_count_delete',
        '__alkstore_jobs_count_update',
        '__alkstore_queue_counts_fold',
      ])
        raw.exec(`DROP TRIGGER ${t}`);
      raw.exec('DROP TABLE __alkstore_queue_counts');
      raw.exec(`UPDATE __alkstore_meta SET value = ${SCHEMA_VERSION} WHERE key = 'schema_version'`);
      raw
        .prepare(
          "INSERT INTO __alkstore_jobs (queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at) VALUES ('upgrade', 'pending', '4', 0, 0, 3, 1000, 1000, 0, 0)",
        )
        .run();
      raw.close();
      const s2 = await old.open();
      try {
        expect(await s2.queue('upgrade').stats()).toMatchObject({ pending: 4, processing: 0, dead: 1, scheduled: 1 });
        await s2.queue('upgrade').enqueue(5);
        expect(await s2.queue('upgrade').stats()).toMatchObject({ pending: 5 });
      } finally {
        await s2.close();
      }
      const check = new Database(old.location, { readonly: true });
      expect(check.prepare("SELECT value FROM __alkstore_meta WHERE key = 'schema_version'").pluck().get()).toBe(
        SCHEMA_VERSION,
      );
      check.close();
    } finally {
      await old.destroy();
    }
  });

  it('applies the synchronous option and validates options', async () => {
    const conn = await openConnection(db.location, 'normal');
    expect(conn.db.pragma('synchronous', { simple: true })).toBe(1);
    conn.close();
    const full = await openConnection(db.location, 'full');
    expect(full.db.pragma('synchronous', { simple: true })).toBe(2);
    full.close();
    await expect(openSqliteStore({ path: db.location, synchronous: 'off' as 'full' })).rejects.toThrow(InvalidOption);
    await expect(openSqliteStore({ path: '' })).rejects.toThrow(InvalidOption);
    await expect(openSqliteStore({ path: db.location, wakeFallbackMs: 0 })).rejects.toThrow(RangeError);
  });

  it('creates the missing parent directories of a file path, and names the directory when it cannot', async () => {
    const root = dirname(db.location);
    const nested = join(root, 'fresh-checkout', 'data', 'app.db');
    const s = await openSqliteStore({ path: nested });
    try {
      await s.queue('first-boot').enqueue(1);
      expect(existsSync(nested)).toBe(true);
    } finally {
      await s.close();
    }
    // A file where a directory should be: mkdir cannot help, and the error says which directory.
    writeFileSync(join(root, 'not-a-dir'), 'x');
    const err = await refusal(() => openSqliteStore({ path: join(root, 'not-a-dir', 'app.db') }));
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as Error).message).toContain(`creating the directory ${JSON.stringify(join(root, 'not-a-dir'))}`);
  });

  it('prunes wake rows older than the retention, keeping the newest row', async () => {
    const conn = await openConnection(db.location, 'normal');
    try {
      const insert = conn.db.prepare('INSERT INTO __alkstore_notify (channel, created_at) VALUES (?, 0)');
      for (let i = 0; i < 5; i++) insert.run('prune-me');
      const max = conn.db.prepare('SELECT max(id) FROM __alkstore_notify').pluck().get() as number;
      const pruner = new NotifyPruner();
      const t0 = 1_000_000;
      pruner.maybePrune(conn, t0); // marks the current max
      pruner.maybePrune(conn, t0 + 30_000);
      expect(conn.db.prepare('SELECT count(*) FROM __alkstore_notify WHERE id <= ?').pluck().get(max)).toBeGreaterThan(
        0,
      );
      pruner.maybePrune(conn, t0 + 61_000);
      expect(conn.db.prepare('SELECT count(*) FROM __alkstore_notify WHERE id < ?').pluck().get(max)).toBe(0);
      expect(conn.db.prepare('SELECT count(*) FROM __alkstore_notify WHERE id = ?').pluck().get(max)).toBe(1);
    } finally {
      conn.close();
    }
  });

  it('closes: receivers end, an open transaction rolls back, later calls reject with Closed', async () => {
    const s = await openSqliteStore({ path: db.location });
    const r = s.listen('closing');
    const pending = r.recv();
    const tx = await openTx(s);
    await tx.enqueue('closing-queue', 'never committed');
    const queue = s.queue('closing-queue');
    const waiting = queue.enqueue('queued behind the transaction');
    await s.close();
    expect(await pending).toBeNull();
    expect(r.closed).toBe(true);
    await expect(waiting).rejects.toThrow(Closed);
    await expect(tx.enqueue('closing-queue', 1)).rejects.toThrow(Closed);
    await expect(queue.enqueue(1)).rejects.toThrow(Closed);
    expect(() => s.queue('closing-queue')).toThrow(Closed);
    await expect(s.now()).rejects.toThrow(Closed);
    expect(() => s.listen('closing')).toThrow(Closed);
    await s.close();
    expect((await store.queue('closing-queue').stats()).pending).toBe(0);
  });
});

describe('sqlite engine on :memory:', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openSqliteStore({ path: ':memory:' });
  });
  afterAll(async () => {
    await store.close();
  });

  it('runs queues, streams, transactions and in-process wakes on one connection', async () => {
    const q = store.queue('mem');
    const wake = q.listen();
    const id = await q.enqueue({ n: 1 });
    expect(await wake.recv(AbortSignal.timeout(5_000))).toEqual({ channel: '__alkstore_queue:mem' });
    const job = await q.claimOne();
    expect(job?.id).toBe(id);
    expect(await job!.ack()).toBe(true);

    const sub = store.stream('mem-stream').subscribe('c');
    const tx = await openTx(store);
    await tx.publish('mem-stream', 'in tx');
    // A read while the handle is open waits for it and never sees uncommitted rows.
    const read = store.stream('mem-stream').readSince(0);
    await tx.commit();
    expect((await read).map((e) => e.payload)).toEqual(['in tx']);
    expect(await sub.next(AbortSignal.timeout(5_000))).toMatchObject({ offset: 1, payload: 'in tx' });
    sub.close();
    wake.close();
  });

  it('keeps one database per store: a second :memory: store is empty', async () => {
    await store.queue('isolated').enqueue(1);
    const second = await openSqliteStore({ path: ':memory:' });
    try {
      expect((await second.queue('isolated').stats()).pending).toBe(0);
    } finally {
      await second.close();
    }
  });

  it('fires due schedules', async () => {
    await store.schedule('mem-tick', '@every 1s', 'mem-ticks', { tick: true }, { startAt: 0 });
    const q = store.queue('mem-ticks');
    const ac = new AbortController();
    const running = store.runSchedules(ac.signal, { maxTickMs: 50 });
    await waitFor('a scheduled job', async () => (await q.stats()).pending > 0);
    ac.abort();
    await running;
    expect((await q.claimOne())?.payload).toEqual({ tick: true });
  });
});
