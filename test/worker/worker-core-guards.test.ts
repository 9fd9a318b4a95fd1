import { describe, expect, it } from '@jest/globals';
import { PermanentError } from '../../lib/contract/errors.js';
import type { ClaimOpts, Job, Queue, QueueStats, Store } from '../../lib/contract/types.js';
import {
  WorkerCore,
  type FailureOutcome,
  type WorkerCoreOptions,
  type WorkerObserver,
} from '../../lib/worker/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';
import { gate, MemoryLogger } from '../nest/nest-fixtures.js';
import { patchJob, type JobPatch } from '../outbox/outbox-fixtures.js';

/** WorkerCore as the queue worker configures it, with a long idle poll: only wakes, kicks and timers start claims. */
function coreOptions(queue: Queue, logger: MemoryLogger, extra: Partial<WorkerCoreOptions>): WorkerCoreOptions {
  return {
    queue,
    name: 'guard test',
    handler: async () => undefined,
    concurrency: 1,
    prefetch: 0,
    maxClaim: 10,
    leaseMs: undefined,
    renewLeases: true,
    jobSignals: false,
    storeTimeoutMs: 10_000,
    pollIntervalMs: 60_000,
    idlePollIntervalMs: 60_000,
    firstBackoffMs: 100,
    maxBackoffMs: 1_000,
    drainTimeoutMs: 2_000,
    minOutcomeDrainMs: 1_000,
    releaseOnDrainTimeout: true,
    stopMessage: 'stopped',
    decide: (_job, failure, error): FailureOutcome =>
      failure === 'permanent'
        ? { kind: 'dead', reason: 'permanent', error }
        : { kind: 'retry', reason: 'error', delayMs: undefined, error },
    workerId: 'guard-worker',
    logger,
    logHandlerErrors: false,
    observer: null,
    statsIntervalMs: 60_000,
    ...extra,
  };
}

/** The real queue; claimed jobs patched (fault injection on top of the real store) and stats optionally replaced. */
function faulty(queue: Queue, patch: ((job: Job) => JobPatch) | null, stats?: () => Promise<QueueStats>): Queue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'claimBatch' && patch) {
        return async (max: number, workerId?: string, opts?: ClaimOpts) =>
          (await target.claimBatch(max, workerId, opts)).map((j) => patchJob(j, patch(j)));
      }
      if (prop === 'stats' && stats) return stats;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

async function running(core: WorkerCore, body: () => Promise<void>): Promise<void> {
  const stop = new AbortController();
  const loop = core.run(stop.signal);
  try {
    await body();
  } finally {
    stop.abort();
    await loop;
  }
}

for (const engine of contractEngines()) {
  describe(`worker core guards (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('observer hooks that throw (or reject) are logged once per hook and ignored: every job is still acked', async () => {
      const q = store.queue('guard-hooks');
      const logger = new MemoryLogger();
      const unhandled: unknown[] = [];
      const onUnhandled = (err: unknown): void => void unhandled.push(err);
      process.on('unhandledRejection', onUnhandled);
      const boom = (hook: string) => () => {
        throw new Error(`${hook} hook broke`);
      };
      const observer: WorkerObserver = {
        claimed: boom('claimed'),
        completed: boom('completed'),
        drained: () => Promise.reject(new Error('drained hook rejected')) as unknown as void,
        leaseLost: boom('leaseLost'),
      };
      const core = new WorkerCore(coreOptions(q, logger, { observer, concurrency: 2 }));
      try {
        const ids = await q.enqueueMany([1, 2, 3, 4, 5]);
        await running(core, async () => {
          await waitFor(
            'every job acked',
            async () => {
              const left = await Promise.all(ids.map((id) => q.getJob(id)));
              return left.every((j) => j === null);
            },
            10_000,
            10,
          );
        });
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
      expect(unhandled).toEqual([]);
      for (const hook of ['claimed', 'completed'])
        expect(logger.lines.filter((l) => l.includes(`the ${hook} hook`))).toHaveLength(1);
      // The drained hook rejects asynchronously (after the last claim found nothing): logged at most once, never unhandled.
      expect(logger.lines.filter((l) => l.includes('the drained hook')).length).toBeLessThanOrEqual(1);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    for (const bad of [Number.NaN, -5, Number.POSITIVE_INFINITY]) {
      it(`decide returning delayMs ${bad} is refused before the write: the job is retried at once with the queue's backoff and its error recorded`, async () => {
        const q = store.queue(`guard-decide-${String(bad)}`, { backoffBaseMs: 60_000, leaseMs: 600_000 });
        const logger = new MemoryLogger();
        const core = new WorkerCore(
          coreOptions(q, logger, {
            handler: async () => {
              throw new Error('handler failed');
            },
            decide: (_job, _failure, error) => ({ kind: 'retry', reason: 'error', delayMs: bad, error }),
          }),
        );
        const id = await q.enqueue('x');
        await running(core, async () => {
          // Without the check the write is refused as a store error and retried for the whole 10-minute lease.
          await waitFor(
            'the job is back to pending with its error',
            async () => {
              const j = await q.getJob(id);
              return j?.state === 'pending' && j.lastError !== null;
            },
            10_000,
            10,
          );
        });
        const job = (await q.getJob(id))!;
        expect(job).toMatchObject({ state: 'pending', attempts: 1, lastError: 'handler failed' });
        // The queue's backoff (base 60 s, attempt 1: 30..60 s), not the bad delay.
        expect(job.runAt - job.enqueuedAt).toBeGreaterThanOrEqual(30_000 - 1_000);
        expect(
          logger.lines.filter((l) => /decide failed for job/.test(l) && /delayMs returned by decide/.test(l)),
        ).toHaveLength(1);
      });
    }

    it('shutdown does not wait for a queue stats sample in flight', async () => {
      const q = store.queue('guard-stats');
      const logger = new MemoryLogger();
      const hung = gate();
      let sampling = false;
      const core = new WorkerCore(
        coreOptions(
          faulty(q, null, async () => {
            sampling = true;
            await hung.promise;
            return q.stats();
          }),
          logger,
          {
            observer: { stats: () => undefined },
            statsIntervalMs: 1,
            storeTimeoutMs: 30_000,
            drainTimeoutMs: 200,
            minOutcomeDrainMs: 0,
          },
        ),
      );
      const stop = new AbortController();
      const loop = core.run(stop.signal);
      let stopped = false;
      try {
        await waitFor('a stats sample is in flight', () => sampling, 10_000, 5);
        stop.abort();
        void loop.then(() => (stopped = true));
        // The run resolves while the sample still hangs (it would otherwise wait out storeTimeoutMs, 30 s).
        await waitFor('run() resolved', () => stopped, 10_000, 5);
      } finally {
        hung.open();
        stop.abort();
        await loop;
      }
      expect(stopped).toBe(true);
    });

    it('a landed dead-letter write wakes a claim loop held back by unsettled outcomes', async () => {
      const q = store.queue('guard-held');
      // The dead-letter writes are held until the test lets them go.
      const held = gate();
      let failsHeld = 0;
      const ran: number[] = [];
      const worker = new WorkerCore(
        coreOptions(
          faulty(q, (job) => ({
            fail: async (error: unknown) => {
              failsHeld += 1;
              await held.promise;
              return job.fail(error);
            },
          })),
          new MemoryLogger(),
          {
            maxClaim: 1,
            handler: async (job) => {
              ran.push(job.payload as number);
              throw new PermanentError('no');
            },
          },
        ),
      );
      await q.enqueueMany([1, 2, 3]);
      await running(worker, async () => {
        // One slot, one job per claim: two unsettled outcomes (more than concurrency + prefetch) hold the loop back.
        await waitFor('two dead-letter writes held', () => failsHeld === 2, 10_000, 5);
        expect(ran).toEqual([1, 2]);
        // The kick already scheduled by the second job's freed slot runs first (a few event-loop turns, not a
        // timed proof): the loop is then waiting, held back, before any outcome lands.
        for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
        held.open();
        // Dead-letter writes send no wake and the idle poll is 60 s: only the settled outcomes can restart the loop.
        await waitFor('the third job ran', () => ran.length === 3, 10_000, 5);
        await waitFor('all three dead', async () => (await q.stats()).dead === 3, 10_000, 10);
      });
    });
  });
}
