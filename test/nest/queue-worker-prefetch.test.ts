import { describe, expect, it } from '@jest/globals';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { gate, MemoryLogger } from './nest-fixtures.js';

/** The real queue with every `claimBatch` result reported to `seen` (ids of the claimed jobs, per call). */
function watchClaims(queue: Queue, seen: { max: number; ids: number[] }[]): Queue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'claimBatch') {
        return async (max: number, workerId?: string, opts?: ClaimOpts) => {
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

interface Extra {
  concurrency: number;
  prefetch: number;
  visibilityTimeoutMs?: number;
  drainTimeoutMs?: number;
}

function worker(queue: Queue, handler: (job: Job) => Promise<void>, logger: MemoryLogger, extra: Extra): QueueWorker {
  return new QueueWorker({
    queue,
    handler,
    name: 'prefetch worker',
    concurrency: extra.concurrency,
    prefetch: extra.prefetch,
    leaseMs: extra.visibilityTimeoutMs,
    idlePollIntervalMs: 200,
    drainTimeoutMs: extra.drainTimeoutMs ?? 10_000,
    workerId: 'prefetch-worker',
    logger,
  });
}

for (const engine of contractEngines()) {
  describe(`QueueWorker prefetch (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('refuses a negative or fractional prefetch', () => {
      const q = store.queue('pf-invalid');
      for (const prefetch of [-1, 1.5, Number.NaN]) {
        expect(() => worker(q, async () => undefined, new MemoryLogger(), { concurrency: 2, prefetch })).toThrow(
          RangeError,
        );
      }
      expect(() => worker(q, async () => undefined, new MemoryLogger(), { concurrency: 2, prefetch: -1 })).toThrow(
        /prefetch of prefetch worker/,
      );
    });

    it('holds up to concurrency + prefetch claimed jobs in one claim but runs at most concurrency handlers', async () => {
      const q = store.queue('pf-hold');
      const ids = await q.enqueueMany([1, 2, 3, 4, 5, 6, 7]);
      const claims: { max: number; ids: number[] }[] = [];
      const hold = gate();
      const started: number[] = [];
      let inFlight = 0;
      let maxInFlight = 0;
      const w = worker(
        watchClaims(q, claims),
        async (job) => {
          started.push(job.id);
          inFlight += 1;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await hold.promise;
          inFlight -= 1;
        },
        new MemoryLogger(),
        { concurrency: 2, prefetch: 3 },
      );
      w.start();
      try {
        await waitFor('two handlers running', () => started.length === 2);
        await waitFor('five jobs claimed', async () => (await q.stats()).processing === 5);
        expect(claims[0]).toEqual({ max: 5, ids: ids.slice(0, 5) });
        // Buffered jobs wait for a slot; the seventh job is not claimed while the buffer is full.
        expect(started).toEqual(ids.slice(0, 2));
        expect((await q.stats()).pending).toBe(2);
        hold.open();
        await waitFor('all acked', async () => {
          const st = await q.stats();
          return st.pending === 0 && st.processing === 0;
        });
      } finally {
        hold.open();
        await w.stop();
      }
      // Claim order is kept (FIFO buffer), every job ran once, never more than `concurrency` at a time.
      expect(started).toEqual(ids);
      expect(maxInFlight).toBe(2);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('stop() releases buffered jobs at once: another worker claims them with their attempt given back, nothing is lost', async () => {
      const q = store.queue('pf-stop');
      const ids = await q.enqueueMany([1, 2, 3, 4]);
      const hold = gate();
      const started: number[] = [];
      const logger = new MemoryLogger();
      const w = worker(
        q,
        async (job) => {
          started.push(job.id);
          await hold.promise;
        },
        logger,
        { concurrency: 1, prefetch: 3, drainTimeoutMs: 30_000 },
      );
      w.start();
      let stopped = false;
      let stopping: Promise<void> | null = null;
      try {
        await waitFor(
          'one running, three buffered',
          async () => started.length === 1 && (await q.stats()).processing === 4,
        );
        stopping = w.stop().then(() => {
          stopped = true;
        });
        // stop() still waits for the running handler (drain timeout 30 s), yet the buffered jobs are pending again now.
        await waitFor('buffered jobs released', async () => (await q.stats()).pending === 3);
        const other = await q.claimBatch(10, 'other-worker');
        expect(other.map((j) => j.id).sort((a, b) => a - b)).toEqual(ids.slice(1));
        for (const job of other) expect(job.attempts).toBe(1);
        expect(stopped).toBe(false);
        expect(await q.ackBatch(other)).toBe(3);
      } finally {
        hold.open();
        await (stopping ?? w.stop());
      }
      expect(started).toEqual([ids[0]]);
      expect(logger.has(/releasing 3 buffered job\(s\) that never started: the worker is stopping/)).toBe(true);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('releases a buffered job that waited half its lease instead of starting it late; it runs later with its attempt given back', async () => {
      const q = store.queue('pf-lease');
      const ids = await q.enqueueMany([1, 2, 3]);
      const claims: { max: number; ids: number[] }[] = [];
      const hold = gate();
      const runs: { id: number; attempts: number }[] = [];
      const logger = new MemoryLogger();
      const w = worker(
        watchClaims(q, claims),
        async (job) => {
          runs.push({ id: job.id, attempts: job.attempts });
          if (job.id === ids[0]) await hold.promise;
        },
        logger,
        // The first job keeps the only slot past half the 4 s lease of the two buffered behind it.
        { concurrency: 1, prefetch: 2, visibilityTimeoutMs: 4_000 },
      );
      w.start();
      try {
        await waitFor(
          'the buffered jobs were released',
          () => logger.has(/releasing 2 buffered job\(s\) that never started: they waited half their lease/),
          20_000,
        );
        // Released, not run: only the first job has started.
        expect(runs.map((r) => r.id)).toEqual([ids[0]]);
        // Claimed again after the release (the release woke the queue).
        await waitFor(
          'buffered jobs claimed again',
          () => claims.filter((c) => c.ids.includes(ids[1]!)).length >= 2,
          20_000,
        );
        hold.open();
        await waitFor(
          'all acked',
          async () => {
            const st = await q.stats();
            return st.pending === 0 && st.processing === 0;
          },
          20_000,
        );
      } finally {
        hold.open();
        await w.stop();
      }
      // Each ran exactly once, and a released claim did not cost an attempt.
      expect(runs.map((r) => r.id).sort((a, b) => a - b)).toEqual(ids);
      for (const r of runs) expect(r.attempts).toBe(1);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('drains a backlog with prefetch, each job once', async () => {
      const q = store.queue('pf-drain');
      const ids = await q.enqueueMany(Array.from({ length: 200 }, (_, i) => i));
      const runs = new Map<number, number>();
      const w = worker(
        q,
        async (job) => {
          runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
          await new Promise((resolve) => setImmediate(resolve));
        },
        new MemoryLogger(),
        { concurrency: 4, prefetch: 6 },
      );
      w.start();
      try {
        await waitFor(
          'all acked',
          async () => {
            const st = await q.stats();
            return st.pending === 0 && st.processing === 0;
          },
          30_000,
        );
      } finally {
        await w.stop();
      }
      expect([...runs.keys()].sort((a, b) => a - b)).toEqual(ids);
      expect([...runs.values()].every((n) => n === 1)).toBe(true);
    });
  });
}
