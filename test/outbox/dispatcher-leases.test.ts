import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, withEngineDb, waitFor, type EngineDb } from '../helpers/engines.js';
import { faultyStore, gate, MemoryLogger, RecordingMetrics, startDispatcher, type AckRef } from './outbox-fixtures.js';

for (const engine of contractEngines()) {
  describe(`outbox dispatcher leases and fencing (${engine.name})`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it("fences a lapsed lease: the first worker's late completion changes zero rows, and the reclaiming dispatcher delivers it", async () => {
      const outbox = 'lapsed';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const [stale] = await q.claimBatch(1, 'stale-worker', { leaseMs: 300 });
      expect(stale!.id).toBe(id);
      // Lapsed, not yet reclaimed: only the deadline in the fence refuses these.
      await waitFor('the database clock to pass the stale deadline', async () => (await store.now()) > stale!.deadline);
      expect(await stale!.heartbeat(60_000)).toBe(false);
      expect(await stale!.ack()).toBe(false);
      expect(await q.getJob(id)).toMatchObject({ state: 'processing', attempts: 1, claimedUntil: stale!.deadline });
      // Reclaimed and in delivery: the row is live again under the dispatcher's token, so only
      // the token in the fence refuses the stale worker's late completion.
      const delivered: number[] = [];
      const staleResults: Record<string, boolean> = {};
      const r = startDispatcher({
        store,
        outbox,
        handler: async (job) => {
          staleResults.ack = await stale!.ack();
          staleResults.retry = await stale!.retry(new Error('late'), 0);
          staleResults.fail = await stale!.fail(new Error('late'));
          staleResults.heartbeat = await stale!.heartbeat(60_000);
          const live = await q.getJob(job.id);
          staleResults.rowIntact = live?.state === 'processing' && live.attempts === 2 && live.lastError === null;
          delivered.push(job.attempts);
        },
      });
      try {
        await waitFor(
          'the dispatcher reclaimed, delivered and acked it',
          async () => delivered.length === 1 && (await q.getJob(id)) === null,
        );
      } finally {
        await r.stop();
      }
      expect(delivered).toEqual([2]);
      expect(staleResults).toEqual({ ack: false, retry: false, fail: false, heartbeat: false, rowIntact: true });
      expect(await stale!.ack()).toBe(false);
      expect(await q.getJob(id)).toBeNull();
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('abandons an outcome write that keeps failing for leaseMs to the lease; the row is redelivered (duplicate window 1)', async () => {
      const outbox = 'outcome-budget';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const other = await db.open();
      const calls: string[] = [];
      let ackCalls = 0;
      const brokenAck = faultyStore(store, {
        ackBatch: async () => {
          ackCalls += 1;
          throw new Error('simulated store outage');
        },
      });
      const settings = { leaseMs: 1_500, publishTimeoutMs: 1_000, storeTimeoutMs: 700 };
      const metricsA = new RecordingMetrics();
      const a = startDispatcher({
        store: brokenAck,
        outbox,
        settings,
        metrics: metricsA,
        workerId: 'a',
        handler: () => void calls.push('a'),
      });
      try {
        await waitFor('A gave up on the ack', () => metricsA.abandonedBy['outcome-write'] === 1);
        expect(ackCalls).toBeGreaterThan(1);
      } finally {
        await a.stop();
      }
      const attemptsSeenByB: number[] = [];
      const b = startDispatcher({
        store: other,
        outbox,
        settings,
        workerId: 'b',
        handler: (job) => {
          calls.push('b');
          attemptsSeenByB.push(job.attempts);
        },
      });
      try {
        await waitFor('B redelivered it after the lease', async () => (await q.getJob(id)) === null);
      } finally {
        await b.stop();
      }
      expect(calls).toEqual(['a', 'b']);
      expect(attemptsSeenByB).toEqual([2]);
    });

    it('acks the deliveries that succeed together with one ackBatch statement', async () => {
      const outbox = 'batched-acks';
      const q = store.outbox(outbox).queue;
      const ids = await q.enqueueMany(Array.from({ length: 8 }, (_, n) => ({ n })));
      const writes: number[][] = [];
      const watched = faultyStore(store, {
        ackBatch: (jobs, real) => {
          writes.push(jobs.map((j) => j.id));
          return real(jobs);
        },
      });
      const hold = gate();
      let started = 0;
      const r = startDispatcher({
        store: watched,
        outbox,
        settings: { claimSize: 8, concurrency: 8 },
        handler: async () => {
          started += 1;
          await hold.promise;
        },
      });
      try {
        await waitFor('all eight deliveries in flight', () => started === 8);
        hold.open();
        await waitFor('all eight acked', async () => (await q.stats()).processing === 0);
      } finally {
        await r.stop();
      }
      // They all finished in one event-loop turn, so one statement carries every ack.
      expect(writes).toHaveLength(1);
      expect([...writes[0]!].sort((a, b) => a - b)).toEqual(ids);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('counts a fenced ack in a batch as lease-lost, not as an error, and records the others', async () => {
      const outbox = 'fenced-in-batch';
      const q = store.outbox(outbox).queue;
      const ids = await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
      const stale = ids[1]!;
      // The row's claim token no longer matches, as after a lapsed lease and a reclaim elsewhere: zero rows change for it.
      const staleToken = faultyStore(store, {
        ackBatch: (jobs, real) =>
          real(jobs.map((j): AckRef => (j.id === stale ? { id: j.id, claimToken: 'not-the-claim-token' } : j))),
      });
      const metrics = new RecordingMetrics();
      const logger = new MemoryLogger();
      const hold = gate();
      let started = 0;
      const r = startDispatcher({
        store: staleToken,
        outbox,
        metrics,
        logger,
        handler: async () => {
          started += 1;
          await hold.promise;
        },
      });
      try {
        await waitFor('all three in flight', () => started === 3);
        hold.open();
        await waitFor('the fenced ack was counted', () => metrics.abandonedBy['lease-lost'] === 1);
        await waitFor('the slots freed', () => r.dispatcher.inFlight === 0);
      } finally {
        await r.stop();
      }
      expect(await q.getJob(ids[0]!)).toBeNull();
      expect(await q.getJob(ids[2]!)).toBeNull();
      expect((await q.getJob(stale))?.state).toBe('processing');
      expect(metrics.abandonedBy).toEqual({ 'lease-lost': 1, 'outcome-write': 0, drain: 0 });
      expect(metrics.publishedCount).toBe(3);
      expect(logger.lines.filter((l) => l.startsWith('warn') || l.startsWith('error'))).toEqual([]);
      await q.cancel(stale);
    });
  });
}
