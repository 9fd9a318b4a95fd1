/** The library's queue worker (what a `@QueueHandler` runs) for the scale workloads, counting handled jobs. */
import type { Queue } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { withTimeout } from '../lib/util.js';

export interface CountingWorker {
  /** Jobs whose handler ran. */
  readonly handled: () => number;
  stop(): Promise<void>;
}

/** Concurrency 10, prefetch 10 (the B2 settings); `onJob` runs in each handler with the job's payload. */
export function startWorker(
  queue: Queue,
  name: string,
  onJob: (payload: unknown) => void = () => undefined,
): CountingWorker {
  let handled = 0;
  const w = new QueueWorker({
    queue,
    handler: async (job) => {
      handled++;
      onJob(job.payload);
    },
    name: `bench:${name}`,
    concurrency: 10,
    prefetch: 10,
    idlePollIntervalMs: 1000,
    drainTimeoutMs: 2000,
    workerId: `bench-${name}-${process.pid}`,
    logger: {
      log: () => undefined,
      warn: (m) => process.stderr.write(`${m}\n`),
      error: (m) => process.stderr.write(`${m}\n`),
    },
  });
  w.start();
  return {
    handled: () => handled,
    stop: () => withTimeout('QueueWorker stop', 15_000, w.stop()).catch(() => undefined),
  };
}
