import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { sqliteFile, type EngineDb } from '../helpers/engines.js';
import { openTx } from '../helpers/open-tx.js';

/** The wake and claim fast paths: in-process wakes at commit, deferred claim fsync. */
describe('sqlite engine: wake and claim fast paths', () => {
  let db: EngineDb;
  let store: Store;

  beforeAll(async () => {
    db = await sqliteFile.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('has the wake of its own commit pending by the time the write resolves', async () => {
    const q = store.queue('fast-wake');
    const r = q.listen();
    try {
      await q.enqueue({ n: 1 });
      // An already-aborted signal: recv returns only a wake that is pending right now.
      expect(await r.recv(AbortSignal.abort())).toEqual({ channel: expect.any(String) });
    } finally {
      r.close();
    }
  });

  it('does not wake again when the watcher later reads the rows of its own commit', async () => {
    const q = store.queue('no-double');
    const r = q.listen();
    const marker = store.listen('no-double-marker');
    const raw = new Database(db.location);
    try {
      await q.enqueue({ n: 1 });
      expect(await r.recv(AbortSignal.abort())).not.toBeNull();
      // A commit by another connection after ours: once the watcher dispatched it, it has read our row too.
      raw.prepare("INSERT INTO __alkstore_notify (channel, created_at) VALUES ('no-double-marker', 0)").run();
      expect(await marker.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'no-double-marker' });
      expect(await r.recv(AbortSignal.abort())).toBeNull();
    } finally {
      raw.close();
      marker.close();
      r.close();
    }
  });

  it("wakes a queue's listener for another store's committed enqueue, never for a rolled-back one, once for its own", async () => {
    const other = await openSqliteStore({ path: db.location });
    const q = store.queue('seq-wake');
    const r = q.listen();
    const marker = store.listen('seq-wake-marker');
    try {
      // Rolled back on the other connection: once the marker committed after it is dispatched, nothing is pending.
      await other
        .withTx(async (tx) => {
          await tx.enqueue('seq-wake', { n: 0 });
          throw new Error('roll back');
        })
        .catch(() => undefined);
      await other.notify('seq-wake-marker');
      expect(await marker.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'seq-wake-marker' });
      expect(await r.recv(AbortSignal.abort())).toBeNull();
      // Committed on the other connection: the listener here wakes.
      await other.queue('seq-wake').enqueue({ n: 1 });
      expect(await r.recv(AbortSignal.timeout(10_000))).toEqual({ channel: r.channel });
      // Its own enqueue wakes it at commit, and the watcher reading that step later does not wake it again.
      await q.enqueue({ n: 2 });
      expect(await r.recv(AbortSignal.abort())).not.toBeNull();
      await other.notify('seq-wake-marker');
      expect(await marker.recv(AbortSignal.timeout(10_000))).toEqual({ channel: 'seq-wake-marker' });
      expect(await r.recv(AbortSignal.abort())).toBeNull();
      expect(await q.stats()).toMatchObject({ pending: 2, processing: 0, dead: 0 });
    } finally {
      marker.close();
      r.close();
      await other.close();
    }
  });

  it('never wakes for a rolled-back transaction', async () => {
    const r = store.listen('rolled-back');
    try {
      const tx = await openTx(store);
      await tx.notify('rolled-back');
      await tx.rollback();
      await store.notify('rolled-back-marker');
      expect(await r.recv(AbortSignal.abort())).toBeNull();
    } finally {
      r.close();
    }
  });

  it.each(['deferred', 'immediate'] as const)(
    'claims with claimDurability %s: visible to other connections, kept across reopen',
    async (claimDurability) => {
      const a = await openSqliteStore({ path: db.location, claimDurability });
      const queue = `durability-${claimDurability}`;
      const id = await a.queue(queue).enqueue({ k: claimDurability });
      const [job] = await a.queue(queue).claimBatch(5, 'w1');
      expect(job.id).toBe(id);
      // Another connection sees the claim at once and cannot take the job.
      const b = await openSqliteStore({ path: db.location });
      expect(await b.queue(queue).claimOne('w2')).toBeNull();
      await a.close();
      await b.close();
      const c = await openSqliteStore({ path: db.location });
      try {
        const raw = new Database(db.location, { readonly: true });
        const row = raw.prepare('SELECT state, attempts, worker_id FROM __alkstore_jobs WHERE id = ?').get(id) as {
          state: string;
          attempts: number;
          worker_id: string;
        };
        raw.close();
        expect(row).toEqual({ state: 'processing', attempts: 1, worker_id: 'w1' });
        expect((await c.queue(queue).getJob(id))?.attempts).toBe(1);
      } finally {
        await c.close();
      }
    },
  );

  it('acks a deferred claim and interleaves claims with other writes of the same turn', async () => {
    const q = store.queue('interleave');
    await q.enqueueMany([1, 2, 3, 4]);
    // Claims, an enqueue and a publish issued in one turn: each resolves with its own result.
    const [c1, e, c2, p] = await Promise.all([
      q.claimBatch(2, 'w'),
      q.enqueue(5),
      q.claimBatch(2, 'w'),
      store.stream('interleave').publish('x'),
    ]);
    expect(c1.map((j) => j.payload)).toEqual([1, 2]);
    expect(c2.map((j) => j.payload)).toEqual([3, 4]);
    expect(typeof e).toBe('number');
    expect(p).toBe(1);
    expect(await q.ackBatch([...c1, ...c2])).toBe(4);
    expect((await q.stats()).pending).toBe(1);
  });

  it('validates claimDurability', async () => {
    await expect(openSqliteStore({ path: db.location, claimDurability: 'never' as 'deferred' })).rejects.toThrow(
      InvalidOption,
    );
  });
});
