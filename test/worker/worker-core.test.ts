import { describe, expect, it } from '@jest/globals';
import { JobCancelled, PermanentError } from '../../lib/contract/errors.js';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { WorkerEvents, type WorkerObserver } from '../../lib/worker/index.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { gate, MemoryLogger } from '../nest/nest-fixtures.js';

type AckRef = Pick<Job, 'id' | 'claimToken'>;

/** The real queue, with `ackBatch` calls recorded and claimed jobs optionally patched. */
function instrumented(queue: Queue, acks: number[][], patch?: (job: Job) => Job): Queue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'ackBatch') {
        return (jobs: readonly AckRef[]) => {
          acks.push(jobs.map((j) => j.id));
          return target.ackBatch(jobs);
        };
      }
      if (prop === 'claimBatch' && patch) {
        return async (max: number, workerId?: string, opts?: ClaimOpts) =>
          (await target.claimBatch(max, workerId, opts)).map(patch);
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function worker(
  queue: Queue,
  handler: (job: Job, signal: AbortSignal) => Promise<unknown>,
  logger: MemoryLogger,
  extra: Partial<ConstructorParameters<typeof QueueWorker>[0]> = {},
): QueueWorker {
  return new QueueWorker({
    queue,
    handler,
    name: 'core test',
    concurrency: 1,
    idlePollIntervalMs: 100,
    drainTimeoutMs: 2_000,
    workerId: 'core-test',
    logger,
    ...extra,
  });
}

for (const engine of contractEngines()) {
  describe(`worker core (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('batch mode: one handler call per claim, the successes acked in one ackBatch, failures retried or dead-lettered per job', async () => {
      const q = store.queue('core-batch', { backoffBaseMs: 60_000 });
      const ids = await q.enqueueMany([0, 1, 2, 3, 4, 5]);
      const acks: number[][] = [];
      const calls: number[][] = [];
      const w = worker(
        instrumented(q, acks),
        async (jobs) => {
          const batch = jobs as unknown as Job<number>[];
          calls.push(batch.map((j) => j.payload));
          return batch.map((j) =>
            j.payload === 1 ? new Error('retry me') : j.payload === 4 ? new PermanentError('never') : undefined,
          );
        },
        new MemoryLogger(),
        { batchSize: 6 },
      );
      w.start();
      try {
        await waitFor(
          'the batch settled',
          async () => (await q.stats()).processing === 0 && (await q.stats()).pending === 1,
        );
      } finally {
        await w.stop();
      }
      expect(calls).toEqual([[0, 1, 2, 3, 4, 5]]);
      expect(acks).toEqual([[ids[0], ids[2], ids[3], ids[5]]]);
      expect(await q.getJob(ids[1]!)).toMatchObject({ state: 'pending', attempts: 1 });
      expect(await q.getJob(ids[4]!)).toMatchObject({ state: 'dead' });
    });

    it('batch mode: a throw retries every job of the batch', async () => {
      const q = store.queue('core-batch-throw', { backoffBaseMs: 60_000 });
      const ids = await q.enqueueMany([1, 2, 3]);
      const w = worker(q, async () => Promise.reject(new Error('batch failed')), new MemoryLogger(), { batchSize: 10 });
      w.start();
      try {
        await waitFor('all three back to pending after one attempt', async () => {
          const rows = await Promise.all(ids.map((id) => q.getJob(id)));
          return rows.every((r) => r?.state === 'pending' && r.attempts === 1);
        });
      } finally {
        await w.stop();
      }
      for (const id of ids) expect(await q.getJob(id)).toMatchObject({ state: 'pending', attempts: 1 });
    });

    it('refuses a batchSize outside 1..10000 or combined with prefetch', () => {
      const q = store.queue('core-batch-invalid');
      for (const batchSize of [0, 1.5, 10_001])
        expect(() => worker(q, async () => undefined, new MemoryLogger(), { batchSize })).toThrow(
          /batchSize of core test/,
        );
      expect(() => worker(q, async () => undefined, new MemoryLogger(), { batchSize: 5, prefetch: 2 })).toThrow(
        /prefetch of core test cannot be combined/,
      );
    });

    it('emits lease-lost when a renewal is refused, and writes no outcome for that job', async () => {
      const q = store.queue('core-lease-lost');
      const id = await q.enqueue({ n: 1 });
      const events = new WorkerEvents(new MemoryLogger(), 'core test');
      const lost: (number | null)[] = [];
      events.on('lease-lost', (job) => void lost.push(job?.id ?? null));
      const hold = gate();
      const acks: number[][] = [];
      const refuseRenewals = (job: Job): Job =>
        new Proxy(job, {
          get: (t, p, r) => (p === 'heartbeat' ? async () => false : (Reflect.get(t, p, r) as unknown)),
        });
      const w = worker(instrumented(q, acks, refuseRenewals), async () => hold.promise, new MemoryLogger(), {
        leaseMs: 300,
        observers: [events],
      });
      w.start();
      try {
        await waitFor('lease-lost was emitted', () => lost.length === 1);
        hold.open();
      } finally {
        hold.open();
        await w.stop();
      }
      expect(lost).toEqual([id]);
      expect(acks).toEqual([]);
    });

    it("gives a handler that reads its signal through rest parameters one of its own: a cancel aborts it, not the other running job's", async () => {
      const q = store.queue('core-rest-signal');
      const [a, b] = await q.enqueueMany(['a', 'b']);
      const signals = new Map<number, AbortSignal>();
      const hold = gate();
      const w = worker(
        q,
        async (...args: unknown[]) => {
          const [job, signal] = args as [Job, AbortSignal];
          signals.set(job.id, signal);
          await Promise.race([
            hold.promise,
            new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true })),
          ]);
        },
        new MemoryLogger(),
        { concurrency: 2, cancelPollMs: 50 },
      );
      w.start();
      try {
        await waitFor('both running', () => signals.size === 2);
        expect(signals.get(a!)).not.toBe(signals.get(b!));
        expect(await q.cancel(a!)).toBe(true);
        await waitFor('the cancelled job aborted', () => signals.get(a!)!.aborted);
        expect(signals.get(a!)!.reason).toBeInstanceOf(JobCancelled);
        expect(signals.get(b!)!.aborted).toBe(false);
        hold.open();
        await waitFor('the other acked', async () => (await q.getJob(b!)) === null);
      } finally {
        hold.open();
        await w.stop();
      }
    });

    it('aborts the signal of a running handler whose lease is lost (reason "lease lost")', async () => {
      const q = store.queue('core-lease-abort');
      await q.enqueue({ n: 1 });
      const refuseRenewals = (job: Job): Job =>
        new Proxy(job, {
          get: (t, p, r) => (p === 'heartbeat' ? async () => false : (Reflect.get(t, p, r) as unknown)),
        });
      let reason: unknown = null;
      const w = worker(
        instrumented(q, [], refuseRenewals),
        (_job, signal) =>
          new Promise<void>((resolve) =>
            signal.addEventListener('abort', () => {
              reason = signal.reason;
              resolve();
            }),
          ),
        new MemoryLogger(),
        { leaseMs: 300 },
      );
      w.start();
      try {
        await waitFor('the handler aborted', () => reason !== null);
      } finally {
        await w.stop();
      }
      expect((reason as Error).message).toBe('lease lost');
    });

    it('aborts the signal of a handler still running after the drain timeout, and releases its job', async () => {
      const q = store.queue('core-drain-abort');
      const id = await q.enqueue({ n: 1 });
      const started = gate();
      const hold = gate();
      let reason: unknown = null;
      const w = worker(
        q,
        async (_job, signal) => {
          signal.addEventListener('abort', () => (reason = signal.reason), { once: true });
          started.open();
          await hold.promise; // ignores its signal on purpose
        },
        new MemoryLogger(),
        { drainTimeoutMs: 100 },
      );
      w.start();
      try {
        await started.promise;
        await w.stop();
        expect((reason as Error).message).toBe('worker stopped: drain timeout');
        expect((await q.getJob(id))?.state).toBe('pending');
      } finally {
        hold.open();
        await w.stop();
      }
    });

    it('treats a synchronous throw like a rejection (a PermanentError dead-letters) and a plain return value like a resolved one', async () => {
      const q = store.queue('core-sync-handler', { backoffBaseMs: 60_000 });
      const [thrown, permanent, plain] = await q.enqueueMany(['throw', 'permanent', 'plain']);
      const w = worker(
        q,
        ((job: Job<string>) => {
          if (job.payload === 'throw') throw new Error('sync');
          if (job.payload === 'permanent') throw new PermanentError('sync, never');
          return { plain: true };
        }) as unknown as (job: Job) => Promise<unknown>,
        new MemoryLogger(),
        { concurrency: 3 },
      );
      w.start();
      try {
        await waitFor(
          'all three settled',
          async () => (await q.stats()).processing === 0 && (await q.getJob(plain!))?.state === 'completed',
        );
      } finally {
        await w.stop();
      }
      const [a, b, c] = await Promise.all([q.getJob(thrown!), q.getJob(permanent!), q.getJob(plain!)]);
      expect([a?.state, a?.attempts, a?.lastError]).toEqual(['pending', 1, 'sync']);
      expect([b?.state, b?.lastError]).toEqual(['dead', 'sync, never']);
      expect(c?.result).toEqual({ plain: true });
    });

    it('keeps working when an observer hook throws, and logs it', async () => {
      const q = store.queue('core-bad-observer');
      await q.enqueueMany([1, 2]);
      const logger = new MemoryLogger();
      const bad: WorkerObserver = {
        completed: () => {
          throw new Error('observer bug');
        },
      };
      const w = worker(q, async () => undefined, logger, { observers: [bad] });
      w.start();
      try {
        await waitFor('both acked', async () => (await q.stats()).pending + (await q.stats()).processing === 0);
      } finally {
        await w.stop();
      }
      expect(logger.has(/the completed hook of an observer threw \(observer bug\)/)).toBe(true);
    });
  });
}
