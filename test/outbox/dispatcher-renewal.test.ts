import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, withEngineDb, waitFor, type EngineDb } from '../helpers/engines.js';
import { faultyStore, MemoryLogger, pause, patchJob, RecordingMetrics, startDispatcher } from './outbox-fixtures.js';

for (const engine of contractEngines()) {
  describe(`outbox dispatcher lease renewal (${engine.name})`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('renews the lease of a row in flight, so a second dispatcher never reclaims it even when it is held longer than the lease', async () => {
      // The row is held for ~1.5 s of delivery plus ~2.5 s of failing ack writes: well past the 3 s lease.
      const outbox = 'renewal';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const other = await db.open();
      const calls: string[] = [];
      let ackFailingUntil = 0;
      const flakyAck = faultyStore(store, {
        ackBatch: async (jobs, real) => {
          if (ackFailingUntil === 0) ackFailingUntil = Date.now() + 2_500;
          if (Date.now() < ackFailingUntil) throw new Error('simulated store outage');
          return real(jobs);
        },
      });
      const settings = { leaseMs: 3_000, publishTimeoutMs: 2_500, storeTimeoutMs: 1_000 };
      const metricsA = new RecordingMetrics();
      const a = startDispatcher({
        store: flakyAck,
        outbox,
        settings,
        metrics: metricsA,
        workerId: 'a',
        handler: async () => {
          calls.push('a');
          await pause(1_500);
        },
      });
      await waitFor('A claimed the row', () => calls.length === 1);
      const b = startDispatcher({ store: other, outbox, settings, workerId: 'b', handler: () => void calls.push('b') });
      try {
        await waitFor('A finally acked the row', async () => (await q.getJob(id)) === null, 20_000);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      expect(ackFailingUntil).toBeGreaterThan(0);
      expect(calls).toEqual(['a']);
      expect(metricsA.abandonedBy).toEqual({ 'lease-lost': 0, 'outcome-write': 0, drain: 0 });
    });

    it('stops tracking a row whose renewal is refused: aborts the handler, writes no outcome, and the row returns after its lease', async () => {
      const outbox = 'lease-lost';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      let writes = 0;
      const count = async (): Promise<boolean> => {
        writes += 1;
        return true;
      };
      const refusingRenewals = faultyStore(store, {
        afterClaim: (jobs) =>
          jobs.map((job) =>
            patchJob(job, { heartbeat: async () => false, ack: count, retry: count, fail: count, release: count }),
          ),
        ackBatch: async (jobs) => {
          await count();
          return jobs.length;
        },
      });
      const reasons: unknown[] = [];
      const metrics = new RecordingMetrics();
      const settings = { leaseMs: 2_000, publishTimeoutMs: 1_900, storeTimeoutMs: 1_000 };
      const a = startDispatcher({
        store: refusingRenewals,
        outbox,
        settings,
        metrics,
        handler: async (_job, signal) => {
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          reasons.push(signal.reason);
        },
      });
      try {
        await waitFor('the handler aborted', () => reasons.length === 1);
        await waitFor('the slot freed', () => a.dispatcher.inFlight === 0);
      } finally {
        await a.stop();
      }
      expect((reasons[0] as Error).message).toBe('lease lost');
      expect(writes).toBe(0);
      expect(metrics.abandonedBy['lease-lost']).toBe(1);
      expect(metrics.retriedBy).toEqual({ error: 0, timeout: 0 });
      const info = await q.getJob(id);
      expect(info?.state).toBe('processing');
      const redelivered = await waitFor('claimable again after the lease', () => q.claimOne('later'));
      expect(redelivered.id).toBe(id);
      expect(redelivered.attempts).toBe(2);
      expect(await redelivered.ack()).toBe(true);
    });

    it('treats a renewal that errors (rather than being refused) as no verdict: the row stays tracked and its ack lands', async () => {
      const outbox = 'renew-error';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      let renewErrors = 0;
      const erroringRenewals = faultyStore(store, (jobs) =>
        jobs.map((job) =>
          patchJob(job, {
            heartbeat: async () => {
              renewErrors += 1;
              throw new Error('simulated timeout');
            },
          }),
        ),
      );
      const metrics = new RecordingMetrics();
      const logger = new MemoryLogger();
      const r = startDispatcher({
        store: erroringRenewals,
        outbox,
        metrics,
        logger,
        settings: { leaseMs: 4_000, publishTimeoutMs: 3_000, storeTimeoutMs: 1_000 },
        handler: () => pause(2_200),
      });
      try {
        await waitFor('acked', async () => (await q.getJob(id)) === null);
      } finally {
        await r.stop();
      }
      expect(renewErrors).toBeGreaterThanOrEqual(1);
      expect(logger.lines.some((l) => l.includes('renewing the lease') && l.includes('simulated timeout'))).toBe(true);
      expect(metrics.abandonedBy).toEqual({ 'lease-lost': 0, 'outcome-write': 0, drain: 0 });
      expect(metrics.publishedCount).toBe(1);
    });
  });
}
