import { afterEach, describe, expect, it } from '@jest/globals';
import { performance } from 'node:perf_hooks';
import type { Job, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import type { EngineFixture } from '../helpers/engines.js';
import { uid, useEnv, waitFor } from './harness.js';

const IDLE_POLL_MS = 5_000;
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * The worker's due timer: a claim that comes back short reports the queue's next run_at, and the
 * worker claims again then instead of at its idle poll. A job that falls due by time sends no wake.
 */
export function dueTimerContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const running: QueueWorker[] = [];
  afterEach(async () => {
    for (const w of running.splice(0)) await w.stop();
  });

  function start(store: Store, queue: string, started: Map<number, number>, seen: Job[]): void {
    const worker = new QueueWorker({
      queue: store.queue(queue),
      handler: async (job) => {
        started.set(job.id, performance.now());
        seen.push(job);
      },
      name: 'due timer test',
      concurrency: 1,
      prefetch: 0,
      idlePollIntervalMs: IDLE_POLL_MS,
      drainTimeoutMs: 5_000,
      workerId: 'due-worker',
      logger: silent,
    });
    running.push(worker);
    worker.start();
  }

  describe('due timer', () => {
    it('a delayed job (delayMs 300) is claimed soon after its run_at, long before the 5 s idle poll', async () => {
      // No hand-off: the claim path alone.
      const store = await env.db.open({ localHandoff: false });
      const name = uid('due-delay');
      const q = store.queue(name);
      const started = new Map<number, number>();
      const seen: Job[] = [];
      start(store, name, started, seen);
      // The enqueue wakes the worker; its claim finds nothing due and reports the run_at. Nothing wakes it at the run_at.
      const enqueuedAt = performance.now();
      const id = await q.enqueue('late', { delayMs: 300 });
      await waitFor('the delayed job ran', () => started.has(id), IDLE_POLL_MS * 2, 5);
      const after = started.get(id)! - enqueuedAt;
      // Never early (the claim refuses a job before its run_at), and well before the idle poll would have
      // claimed it (about 5 s after the enqueue's wake): a generous bound, not a latency figure.
      expect(after).toBeGreaterThanOrEqual(290);
      expect(after).toBeLessThan(300 + 2_000);
      expect(seen[0]!.attempts).toBe(1);
    });

    it('a retry after its backoff is claimed soon after it falls due', async () => {
      const store = await env.db.open({ localHandoff: false });
      const name = uid('due-retry');
      const q = store.queue(name, { backoffBaseMs: 400 });
      const runs: number[] = [];
      const worker = new QueueWorker({
        queue: q,
        handler: async (job) => {
          runs.push(performance.now());
          if (job.attempts === 1) throw new Error('once');
        },
        name: 'due timer retry',
        concurrency: 1,
        prefetch: 0,
        idlePollIntervalMs: IDLE_POLL_MS,
        drainTimeoutMs: 5_000,
        workerId: 'due-retry-worker',
        logger: silent,
      });
      running.push(worker);
      worker.start();
      const id = await q.enqueue('x');
      await waitFor(
        'the retry ran and acked',
        async () => runs.length === 2 && (await q.getJob(id)) === null,
        IDLE_POLL_MS * 2,
        10,
      );
      // Equal-jitter backoff of attempt 1 with base 400: 200..400 ms; then well before the idle poll.
      expect(runs[1]! - runs[0]!).toBeLessThan(400 + 2_000);
    });
  });
}
