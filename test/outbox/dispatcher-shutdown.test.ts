import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { faultyStore, gate, patchJob, RecordingMetrics, startDispatcher } from './outbox-fixtures.js';

for (const engine of contractEngines()) {
  describe(`outbox dispatcher shutdown (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('on abort, drains in-flight deliveries and records their outcomes before run() resolves', async () => {
      const outbox = 'drain';
      const q = store.outbox(outbox).queue;
      await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
      const hold = gate();
      let started = 0;
      const finishedBeforeResolve: boolean[] = [];
      const ackedBeforeResolve: boolean[] = [];
      const watchAcks = faultyStore(store, {
        ackBatch: async (jobs, real) => {
          const n = await real(jobs);
          for (let i = 0; i < jobs.length; i++) ackedBeforeResolve.push(i < n && !r.resolved);
          return n;
        },
      });
      const r = startDispatcher({
        store: watchAcks,
        outbox,
        handler: async () => {
          started += 1;
          await hold.promise;
          finishedBeforeResolve.push(!r.resolved);
        },
      });
      await waitFor('all three deliveries in flight', () => started === 3);
      r.controller.abort();
      hold.open();
      await r.done;
      expect(finishedBeforeResolve).toEqual([true, true, true]);
      expect(ackedBeforeResolve).toEqual([true, true, true]);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('releases rows claimed but never started: claimable again at once, attempts unchanged', async () => {
      const outbox = 'release';
      const q = store.outbox(outbox).queue;
      const ids = await q.enqueueMany([{ n: 1 }, { n: 2 }]);
      const controller = new AbortController();
      // Shutdown begins while the claim is in flight: the claim lands after the abort.
      const abortDuringClaim = faultyStore(store, (jobs) => {
        controller.abort();
        return jobs;
      });
      let calls = 0;
      const r = startDispatcher({ store: abortDuringClaim, outbox, controller, handler: () => void (calls += 1) });
      await r.done;
      expect(calls).toBe(0);
      for (const id of ids) expect(await q.getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
      const again = await q.claimBatch(2, 'next');
      expect(again.map((j) => j.id).sort()).toEqual([...ids].sort());
      expect(again.map((j) => j.attempts)).toEqual([1, 1]);
      for (const j of again) expect(await j.ack()).toBe(true);
    });

    it('after drainTimeoutMs, leaves a still-running delivery to its lease and resolves (duplicate window 3)', async () => {
      const outbox = 'drain-timeout';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const hold = gate();
      const reasons: unknown[] = [];
      let started = false;
      let handlerReturned = false;
      let writes = 0;
      const counted = async (): Promise<boolean> => {
        writes += 1;
        return true;
      };
      // Outcome writes are counted and swallowed: none may happen after run() gave the row up.
      const countWrites = faultyStore(store, {
        afterClaim: (jobs) =>
          jobs.map((job) => patchJob(job, { ack: counted, retry: counted, fail: counted, release: counted })),
        ackBatch: async (jobs) => {
          await counted();
          return jobs.length;
        },
      });
      const metrics = new RecordingMetrics();
      const r = startDispatcher({
        store: countWrites,
        outbox,
        metrics,
        settings: { drainTimeoutMs: 200, leaseMs: 2_000, publishTimeoutMs: 1_500, storeTimeoutMs: 1_000 },
        handler: async (_job, signal) => {
          started = true;
          signal.addEventListener('abort', () => reasons.push(signal.reason), { once: true });
          await hold.promise; // ignores its signal on purpose
          handlerReturned = true;
        },
      });
      await waitFor('the delivery started', () => started);
      await r.stop();
      expect(handlerReturned).toBe(false);
      expect(reasons).toHaveLength(1);
      expect((reasons[0] as Error).message).toBe('dispatcher stopped');
      expect(metrics.abandonedBy.drain).toBe(1);
      hold.open();
      await waitFor('the handler returned', () => handlerReturned);
      await new Promise((resolve) => setImmediate(resolve));
      expect(writes).toBe(0);
      expect((await q.getJob(id))?.state).toBe('processing');
      const redelivered = await waitFor('claimable after the lease', () => q.claimOne('next'), 15_000);
      expect(redelivered.attempts).toBe(2);
      expect(await redelivered.ack()).toBe(true);
    });

    it('resolves at once for an already-aborted signal, claiming nothing', async () => {
      const outbox = 'pre-aborted';
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const d = new OutboxDispatcher({ store, outbox, handler: () => undefined });
      await d.run(AbortSignal.abort());
      expect(await store.outbox(outbox).queue.getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
      await store.outbox(outbox).queue.cancel(id);
    });

    it('refuses a second concurrent run of one dispatcher', async () => {
      const r = startDispatcher({ store, outbox: 'twice', handler: () => undefined });
      try {
        await expect(r.dispatcher.run(new AbortController().signal)).rejects.toThrow(/already running/);
      } finally {
        await r.stop();
      }
    });

    it('validates its options before any I/O', () => {
      expect(() => new OutboxDispatcher({ store, outbox: '', handler: () => undefined })).toThrow(/outbox name/);
      expect(() => new OutboxDispatcher({ store, outbox: '__alkstore_x', handler: () => undefined })).toThrow(
        /reserved prefix/,
      );
      expect(
        () =>
          new OutboxDispatcher({
            store,
            outbox: 'x',
            handler: () => undefined,
            settings: { ordering: 'fifo' as never },
          }),
      ).toThrow(/ordering/);
      expect(() => new OutboxDispatcher({ store, outbox: 'x', handler: 'nope' as never })).toThrow(/handler/);
    });
  });
}
