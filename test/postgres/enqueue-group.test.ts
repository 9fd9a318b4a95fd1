import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { type EngineDb, describePg, postgres, waitFor } from '../helpers/engines.js';

// PostgreSQL-only: concurrent plain enqueues of one queue share a commit (lib/engines/postgres/enqueue-group.ts),
// because commits that NOTIFY are serialized by the server. What a caller must still see: each
// call's own job with its own options, ids in call order, and a wake for another process's worker.
describePg('postgres grouped enqueues', () => {
  let db: EngineDb;
  let store: Store;
  let other: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open({ localHandoff: false });
    other = await db.open({ localHandoff: false });
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('64 concurrent enqueues with mixed options: every job lands with its own options, ids in call order', async () => {
    const q = store.queue('grouped');
    const opts = (i: number) =>
      i % 8 < 4 ? undefined : { priority: 1 + (i % 3), delayMs: i % 16 === 15 ? 60_000 : 0 };
    const ids = await Promise.all(Array.from({ length: 64 }, (_, i) => q.enqueue({ i }, opts(i))));
    expect(new Set(ids).size).toBe(64);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    for (const [i, id] of ids.entries()) {
      const job = await q.getJob(id);
      expect(job === null ? 0 : job.runAt - job.enqueuedAt).toBeGreaterThanOrEqual(opts(i)?.delayMs ? 59_000 : 0);
      expect(job === null ? 0 : job.runAt - job.enqueuedAt).toBeLessThan(opts(i)?.delayMs ? 61_000 : 1_000);
      expect(job?.payload).toEqual({ i });
      expect(job?.priority).toBe(opts(i)?.priority ?? 0);
      expect(job?.state).toBe('pending');
    }
    expect((await q.claimBatch(100)).length).toBe(60); // the four delayed ones are not ready
  });

  it("a grouped commit wakes another store's listener", async () => {
    const q = other.queue('grouped-wake');
    const seen: number[] = [];
    const rx = q.listen();
    void (async () => {
      for await (const _ of rx) seen.push(1);
    })();
    await new Promise((r) => setTimeout(r, 50)); // LISTEN sent; a late subscription would only make the wait fail
    await Promise.all(Array.from({ length: 32 }, (_, i) => store.queue('grouped-wake').enqueue(i)));
    await waitFor('a wake from the grouped commits', () => seen.length > 0, 10_000, 5);
    rx.close();
    expect((await q.stats()).pending).toBe(32);
  });
});
