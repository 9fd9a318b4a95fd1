import { describe, expect, it } from '@jest/globals';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { gate, MemoryLogger } from '../nest/nest-fixtures.js';

interface Claim {
  max: number;
  ids: number[];
}

/** The real queue with every `claimBatch` recorded; `before` runs ahead of each claim (a slow database). */
function watchClaims(queue: Queue, seen: Claim[], before?: () => Promise<void>): Queue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'claimBatch') {
        return async (max: number, workerId?: string, opts?: ClaimOpts) => {
          if (before) await before();
          const jobs = await target.claimBatch(max, workerId, opts);
          seen.push({ max, ids: jobs.map((j) => j.id) });
          return jobs;
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

type WorkerOpts = Partial<ConstructorParameters<typeof QueueWorker>[0]>;

/** A QueueWorker with the default (adaptive) prefetch unless `extra` sets one. */
function worker(
  queue: Queue,
  handler: (job: Job) => Promise<unknown>,
  logger: MemoryLogger,
  extra: WorkerOpts = {},
): QueueWorker {
  return new QueueWorker({
    queue,
    handler,
    name: 'adaptive worker',
    concurrency: 1,
    idlePollIntervalMs: 100,
    drainTimeoutMs: 30_000,
    workerId: 'adaptive',
    logger,
    ...extra,
  });
}

const settled = async (q: Queue): Promise<boolean> => {
  const st = await q.stats();
  return st.pending === 0 && st.processing === 0;
};

for (const engine of contractEngines()) {
  describe(`QueueWorker adaptive prefetch (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('grows its claims on a backlog of short jobs and runs every job exactly once, two workers side by side', async () => {
      const q = store.queue('auto-once');
      const ids = await q.enqueueMany(Array.from({ length: 600 }, (_, i) => i));
      const runs = new Map<number, number>();
      const claims: Claim[] = [];
      const handler = async (job: Job): Promise<void> => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      };
      const a = worker(watchClaims(q, claims), handler, new MemoryLogger(), { concurrency: 3, workerId: 'a' });
      const b = worker(q, handler, new MemoryLogger(), { concurrency: 3, workerId: 'b' });
      a.start();
      b.start();
      try {
        await waitFor('all acked', () => settled(q), 60_000);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      expect([...runs.keys()].sort((x, y) => x - y)).toEqual(ids);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
      // Started at the free slots, then asked for more than the slots while claims came back full.
      expect(claims[0]!.max).toBe(3);
      expect(Math.max(...claims.map((c) => c.max))).toBeGreaterThan(3);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('stop() with a full buffer releases every unstarted job at once: another worker claims them, attempts not consumed', async () => {
      const q = store.queue('auto-stop');
      const ids = await q.enqueueMany(Array.from({ length: 300 }, (_, i) => i));
      const blocker = ids[100]!;
      const hold = gate();
      const started: number[] = [];
      const logger = new MemoryLogger();
      // Short jobs grow the buffer; job 100 then holds the only slot while the buffer stays full behind it.
      const w = worker(
        q,
        async (job) => {
          started.push(job.id);
          if (job.id === blocker) await hold.promise;
        },
        logger,
      );
      w.start();
      let stopped = false;
      let stopping: Promise<void> | null = null;
      let other: Job[] = [];
      try {
        await waitFor(
          'the blocker running with jobs buffered behind it',
          async () => started.includes(blocker) && (await q.stats()).processing > 1,
          30_000,
        );
        stopping = w.stop().then(() => {
          stopped = true;
        });
        // stop() still waits for the running handler (drain timeout 30 s); everything else is pending again.
        await waitFor('buffered jobs released', async () => (await q.stats()).processing === 1, 30_000);
        expect(started.at(-1)).toBe(blocker);
        other = await q.claimBatch(1_000, 'other-worker');
        expect(other.length).toBeGreaterThan(0);
        for (const job of other) expect(job.attempts).toBe(1);
        expect(stopped).toBe(false);
      } finally {
        hold.open();
        await (stopping ?? w.stop());
      }
      expect(await q.ackBatch(other)).toBe(other.length);
      // Each job ran on exactly one worker.
      const all = [...started, ...other.map((j) => j.id)].sort((x, y) => x - y);
      expect(all).toEqual(ids);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('never asks for more than the handlers can start within a quarter of the lease, even when claims are slow', async () => {
      const q = store.queue('auto-lease');
      const ids = await q.enqueueMany(Array.from({ length: 100 }, (_, i) => i));
      const claims: Claim[] = [];
      const runs = new Map<number, number>();
      // Handlers take at least 19 ms on 2 slots: at most 2/19 jobs per ms. Claims take at least 300 ms, so a
      // quarter of the 1.6 s lease leaves at most 100 ms to start buffered jobs: floor(2/19 × 100) = 10, while
      // the claim round trips alone would justify 2 × 2/19 × 300 > 60.
      const leaseBound = Math.floor((2 / 19) * (1_600 * 0.25 - 300));
      const w = worker(
        watchClaims(q, claims, () => new Promise((resolve) => setTimeout(resolve, 300))),
        async (job) => {
          runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          await new Promise((resolve) => setTimeout(resolve, 20));
        },
        new MemoryLogger(),
        { concurrency: 2, leaseMs: 1_600 },
      );
      w.start();
      try {
        await waitFor('all acked', () => settled(q), 60_000);
      } finally {
        await w.stop();
      }
      // A claim asks for the free slots plus the free part of the buffer: never beyond concurrency + the bound.
      const asked = claims.map((c) => c.max);
      expect(Math.max(...asked)).toBeLessThanOrEqual(2 + leaseBound);
      // ...and the buffer did grow (the bound, not a stuck size, is what held it).
      expect(Math.max(...asked)).toBeGreaterThan(2 + 2);
      expect([...runs.keys()].sort((x, y) => x - y)).toEqual(ids);
    });

    it('an explicit prefetch wins: prefetch 0 claims only for free slots, however long the backlog', async () => {
      const q = store.queue('auto-explicit');
      await q.enqueueMany(Array.from({ length: 60 }, (_, i) => i));
      const claims: Claim[] = [];
      const w = worker(watchClaims(q, claims), async () => undefined, new MemoryLogger(), {
        concurrency: 2,
        prefetch: 0,
      });
      w.start();
      try {
        await waitFor('all acked', () => settled(q), 30_000);
      } finally {
        await w.stop();
      }
      expect(claims.length).toBeGreaterThan(0);
      expect(Math.max(...claims.map((c) => c.max))).toBeLessThanOrEqual(2);
    });
  });
}
