import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { sqliteFile, type EngineDb } from '../helpers/engines.js';
import { openTx } from '../helpers/open-tx.js';

describe('sqlite engine under in-process concurrency', () => {
  let db: EngineDb;
  let store: Store;
  let other: Store;

  beforeAll(async () => {
    db = await sqliteFile.create();
    store = await db.open();
    other = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('serializes concurrent withTx transactions without errors, each commit intact', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        store.withTx(async (tx) => {
          const a = await tx.publish('tx-stream', { i, part: 'a' });
          await new Promise((r) => setImmediate(r));
          const b = await tx.publish('tx-stream', { i, part: 'b' });
          await tx.enqueue('tx-queue', i);
          return [a, b];
        }),
      ),
    );
    // Each transaction got two adjacent offsets: nothing interleaved inside a handle.
    for (const [a, b] of results) expect(b).toBe(a + 1);
    const events = await store.stream('tx-stream').readSince(0);
    expect(events.map((e) => e.offset)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect((await store.queue('tx-queue').stats()).pending).toBe(20);
  });

  it('lets transactions on two stores of one file take turns (cross-connection lock waits are async)', async () => {
    const a = await openTx(store);
    const bPromise = openTx(other);
    await a.enqueue('two-stores', 'a');
    await a.commit();
    const b = await bPromise;
    await b.enqueue('two-stores', 'b');
    await b.commit();
    expect((await store.queue('two-stores').stats()).pending).toBe(2);
  });

  it('hands each of thousands of jobs to exactly one of many concurrent claimers on two stores', async () => {
    const total = 3000;
    const ids = await store.queue('many').enqueueMany(Array.from({ length: total }, (_, i) => i));
    const seen = new Map<number, number>();
    const worker = async (s: Store, w: number): Promise<void> => {
      const q = s.queue('many');
      for (;;) {
        const batch =
          w % 2 === 0 ? await q.claimBatch(3, `w${w}`) : [await q.claimOne(`w${w}`)].filter((j) => j !== null);
        if (batch.length === 0) return;
        for (const j of batch) seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
        await Promise.all(batch.map((j) => j.ack()));
      }
    };
    await Promise.all(Array.from({ length: 24 }, (_, w) => worker(w % 3 === 0 ? other : store, w)));
    expect(seen.size).toBe(total);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect([...seen.keys()].sort((x, y) => x - y)).toEqual(ids);
    expect(await store.queue('many').stats()).toMatchObject({ pending: 0, processing: 0 });
  });

  it('rolls back only the failing write when writes of one event-loop turn commit together', async () => {
    // A random source out of [0, 1) makes retry's backoff throw inside its write.
    const s = await openSqliteStore({ path: db.location, random: () => 2 });
    try {
      const q = s.queue('group');
      await q.enqueue('to claim');
      const job = (await q.claimOne('w'))!;
      const results = await Promise.allSettled([
        q.enqueue('first'),
        job.retry('boom'),
        q.enqueue('second'),
        q.enqueue('third'),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(RangeError);
      expect(await q.stats()).toMatchObject({ pending: 3, processing: 1 });
      expect((await q.getJob(job.id))?.state).toBe('processing');
      expect(await job.ack()).toBe(true);
    } finally {
      await s.close();
    }
  });
});
