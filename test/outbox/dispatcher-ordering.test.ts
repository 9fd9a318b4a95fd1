import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, withEngineDb, waitFor, type EngineDb } from '../helpers/engines.js';
import { startDispatcher } from './outbox-fixtures.js';

for (const engine of contractEngines()) {
  describe(`outbox dispatcher per-key ordering (${engine.name})`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('two dispatchers deliver each key in enqueue order, one at a time, through transient failures', async () => {
      const outbox = 'per-key';
      const keys = 5;
      const perKey = 40;
      await store.withTx(async (tx) => {
        for (let n = 0; n < perKey; n++)
          for (let k = 0; k < keys; k++) await tx.outboxEnqueue(outbox, { k, n }, { orderingKey: `k${k}` });
      });
      const attempts: number[][] = Array.from({ length: keys }, () => []);
      const inFlight = new Array<number>(keys).fill(0);
      let overlap = 0;
      let delivered = 0;
      const handler = async (job: { payload: unknown; attempts: number }): Promise<void> => {
        const { k, n } = job.payload as { k: number; n: number };
        if (++inFlight[k]! > 1) overlap++;
        attempts[k]!.push(n);
        await new Promise((r) => setTimeout(r, 1));
        inFlight[k]!--;
        // Every seventh message fails once: its retry must hold the key.
        if (n % 7 === 3 && job.attempts === 1) throw new Error('transient');
        delivered++;
      };
      const other = await db.open();
      const a = startDispatcher({ store, outbox, handler, settings: { ordering: 'per-key' }, workerId: 'a' });
      const b = startDispatcher({ store: other, outbox, handler, settings: { ordering: 'per-key' }, workerId: 'b' });
      try {
        await waitFor('every message delivered', () => delivered === keys * perKey, 60_000, 20);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      expect(overlap).toBe(0);
      for (let k = 0; k < keys; k++) {
        // Attempts per key: each n in order, a failed one repeated right after itself.
        const expected: number[] = [];
        for (let n = 0; n < perKey; n++) expected.push(...(n % 7 === 3 ? [n, n] : [n]));
        expect(attempts[k]).toEqual(expected);
      }
      expect(await store.outbox(outbox).queue.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    }, 90_000);

    it('a crashed worker holding a key blocks only that key until its lease lapses; then the key resumes in order', async () => {
      const outbox = 'per-key-crash';
      const q = store.outbox(outbox).queue;
      for (let n = 0; n < 3; n++) {
        await store.outboxEnqueue(outbox, { key: 'stuck', n }, { orderingKey: 'stuck' });
        await store.outboxEnqueue(outbox, { key: 'free', n }, { orderingKey: 'free' });
      }
      // The "crashed" worker claims one head of each key with a short lease and never finishes.
      const crashed = await q.claimBatch(10, 'crashed', { leaseMs: 1_500 });
      expect(crashed.map((j) => j.payload)).toEqual([
        { key: 'stuck', n: 0 },
        { key: 'free', n: 0 },
      ]);
      expect(await crashed[1]!.ack()).toBe(true); // 'free' moves on; 'stuck' stays with the crashed worker
      const seen: { key: string; n: number; attempts: number }[] = [];
      const r = startDispatcher({
        store,
        outbox,
        settings: { ordering: 'per-key' },
        handler: (job) => void seen.push({ ...(job.payload as { key: string; n: number }), attempts: job.attempts }),
      });
      try {
        await waitFor('the free key drained', () => seen.filter((s) => s.key === 'free').length === 2, 20_000, 10);
        // While the lease holds, nothing of the stuck key was delivered.
        if ((await q.getJob(crashed[0]!.id))!.claimedUntil! > (await store.now()))
          expect(seen.filter((s) => s.key === 'stuck')).toEqual([]);
        await waitFor(
          'the stuck key drained after the lease',
          () => seen.filter((s) => s.key === 'stuck').length === 3,
          30_000,
          10,
        );
      } finally {
        await r.stop();
      }
      expect(seen.filter((s) => s.key === 'free').map((s) => s.n)).toEqual([1, 2]);
      expect(seen.filter((s) => s.key === 'stuck')).toEqual([
        { key: 'stuck', n: 0, attempts: 2 },
        { key: 'stuck', n: 1, attempts: 1 },
        { key: 'stuck', n: 2, attempts: 1 },
      ]);
      expect(await crashed[0]!.ack()).toBe(false);
    }, 60_000);
  });
}
