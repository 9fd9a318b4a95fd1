import type { Job, Queue, Store, StoreLogger } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { loadVectors } from '../unit/vectors.js';
import { waitFor } from './harness.js';

/** conformance/contract/results.json. */
export interface ResultVectors {
  resultLimit: { maxPayloadBytes: number; accept: unknown[]; tooLarge: unknown[] };
  progressLimit: { maxBytes: number; acceptStringOfLength: number; refuseStringOfLength: number };
  progressThrottle: {
    intervalMs: number;
    steps: (
      { at: number; value: unknown; expect: 'write' | 'defer'; dueAt?: number } | { take: number; written: unknown }
    )[];
  };
  cancel: {
    state: 'pending' | 'processing' | 'dead' | 'completed' | 'cancelled' | 'missing';
    returns: boolean;
    after: string | null;
  }[];
}

export const vectors = loadVectors<ResultVectors>('results.json');

export const quiet: StoreLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** Claims until a job of `q` appears. */
export function claimSoon(q: Queue, workerId = 'w', visibilityTimeoutMs?: number): Promise<Job> {
  return waitFor(
    `a claimable job on ${q.name}`,
    () => q.claimOne(workerId, visibilityTimeoutMs === undefined ? undefined : { leaseMs: visibilityTimeoutMs }),
    10_000,
    10,
  );
}

/** A started QueueWorker on `store`'s queue `name`; stop it with `stop()`. */
export function startWorker(
  store: Store,
  name: string,
  handler: (job: Job, signal: AbortSignal) => Promise<unknown>,
  extra: { cancelPollMs?: number } = {},
): QueueWorker {
  const w = new QueueWorker({
    queue: store.queue(name),
    handler,
    name: `test ${name}`,
    concurrency: 4,
    idlePollIntervalMs: 200,
    drainTimeoutMs: 2000,
    workerId: `w-${name}`,
    logger: quiet,
    ...extra,
  });
  w.start();
  return w;
}

/** A promise with its resolver. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
