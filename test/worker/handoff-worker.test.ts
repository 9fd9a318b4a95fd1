import { describe, expect, it } from '@jest/globals';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { HANDOFF, type HandoffPoint, type HandoffTaker } from '../../lib/internal/handoff.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { MemoryLogger } from '../nest/nest-fixtures.js';

/** The real queue with claimBatch calls counted and, when `capture` is given, the hand-off point replaced by one that hands the taker to the test. */
function wrapped(queue: Queue, counts: { claims: number }, capture?: (taker: HandoffTaker) => void): Queue {
  const point: HandoffPoint | undefined = capture && {
    register: (taker) => {
      capture(taker);
      return () => undefined;
    },
    reserve: () => null,
  };
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === HANDOFF && point) return point;
      if (prop === 'claimBatch') {
        return async (max: number, workerId?: string, opts?: ClaimOpts) => {
          const jobs = await target.claimBatch(max, workerId, opts);
          counts.claims += 1;
          return jobs;
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

for (const engine of contractEngines()) {
  describe(`worker core local hand-off (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('a batch worker takes a hand-off as a batch of one, without a claim', async () => {
      const counts = { claims: 0 };
      const q = store.queue('ho-batch', { leaseMs: 600_000 });
      const calls: number[][] = [];
      const w = new QueueWorker({
        queue: wrapped(q, counts),
        handler: async (jobs) => void calls.push((jobs as unknown as Job[]).map((j) => j.id)),
        batchSize: 5,
        name: 'ho batch',
        concurrency: 1,
        idlePollIntervalMs: 60_000,
        drainTimeoutMs: 2_000,
        workerId: 'ho-batch',
        logger: new MemoryLogger(),
      });
      w.start();
      try {
        await waitFor('the first claim', () => counts.claims >= 1, 10_000, 5);
        const before = counts.claims;
        const id = await q.enqueue('x');
        await waitFor('the batch handler ran', () => calls.length === 1, 10_000, 5);
        expect(calls).toEqual([[id]]);
        expect(counts.claims).toBe(before);
        await waitFor('acked', async () => (await q.getJob(id)) === null, 10_000, 10);
      } finally {
        await w.stop();
      }
    });

    it('a slot cancelled after its job fell back to pending lets the worker claim it at once (the wake came while the slot was held)', async () => {
      const counts = { claims: 0 };
      const q = store.queue('ho-cancel', { leaseMs: 600_000 });
      let taker: HandoffTaker | null = null;
      const seen: number[] = [];
      const w = new QueueWorker({
        queue: wrapped(q, counts, (t) => (taker = t)),
        handler: async (job) => void seen.push(job.id),
        name: 'ho cancel',
        concurrency: 1,
        prefetch: 0,
        idlePollIntervalMs: 60_000,
        drainTimeoutMs: 2_000,
        workerId: 'ho-cancel',
        logger: new MemoryLogger(),
      });
      w.start();
      try {
        const t = await waitFor('the worker registered as a taker', () => taker, 10_000, 5);
        // Holds the worker's only slot, as an enqueue in flight does.
        const slot = t.reserve();
        expect(slot).not.toBeNull();
        expect(t.reserve()).toBeNull();
        // The enqueue falls back to pending: its wake reaches the worker while the slot is still held.
        const id = await q.enqueue('x');
        await new Promise((r) => setTimeout(r, 50));
        expect(seen).toEqual([]);
        slot!.cancel();
        await waitFor('the job claimed and run', () => seen.includes(id), 5_000, 5);
      } finally {
        await w.stop();
      }
    });
  });
}
