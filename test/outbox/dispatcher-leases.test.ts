import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, waitFor, type EngineDb } from '../helpers/engines.js';
import { faultyStore, patchJob, RecordingMetrics, startDispatcher } from './outbox-fixtures.js';

for (const engine of contractEngines()) {
  describe(`outbox dispatcher leases and fencing (${engine.name})`, () => {
    let db: EngineDb;
    let store: Store;

    beforeAll(async () => {
      db = await engine.create();
      store = await db.open();
    });
    afterAll(async () => {
      await db?.destroy();
    });

    it("fences a lapsed lease: the first worker's late completion changes zero rows, and the reclaiming dispatcher delivers it", async () => {
      const outbox = 'lapsed';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const [stale] = await q.claimBatch(1, 'stale-worker', { visibilityTimeoutMs: 300 });
      expect(stale!.id).toBe(id);
      const delivered: number[] = [];
      const r = startDispatcher({ store, outbox, handler: (job) => void delivered.push(job.attempts) });
      try {
        await waitFor('the dispatcher reclaimed, delivered and acked it', async () => delivered.length === 1 && (await q.getJob(id)) === null);
      } finally {
        await r.stop();
      }
      expect(delivered).toEqual([2]);
      expect(await stale!.ack()).toBe(false);
      expect(await stale!.retry(new Error('late'), 0)).toBe(false);
      expect(await stale!.fail(new Error('late'))).toBe(false);
      expect(await stale!.heartbeat(60_000)).toBe(false);
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
      const brokenAck = faultyStore(store, (jobs) =>
        jobs.map((job) =>
          patchJob(job, {
            ack: async () => {
              ackCalls += 1;
              throw new Error('simulated store outage');
            },
          }),
        ),
      );
      const settings = { leaseMs: 1_500, publishTimeoutMs: 1_000, storeTimeoutMs: 700 };
      const metricsA = new RecordingMetrics();
      const a = startDispatcher({ store: brokenAck, outbox, settings, metrics: metricsA, workerId: 'a', handler: () => void calls.push('a') });
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
  });
}
