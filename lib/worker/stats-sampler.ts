import type { StoreLogger } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';
import { sleep } from '../internal/sleep.js';
import type { Queue } from '../contract/types.js';
import { isClosed } from './store-health.js';
import { withTimeout } from './timers.js';
import type { WorkerObserver } from './worker-observer.js';

// The stats sampler: `queue.stats()` every `statsIntervalMs` for an observer with a `stats` hook.

const ABORTED = Symbol('aborted');

/** Samples `queue.stats()` for `obs.stats` until `stop` aborts; shutdown does not wait for a sample in flight. */
export async function sampleStats(
  queue: Queue,
  obs: WorkerObserver | null,
  intervalMs: number,
  storeTimeoutMs: number,
  name: string,
  logger: StoreLogger,
  stop: AbortSignal,
): Promise<void> {
  if (!obs?.stats) return;
  while (!stop.aborted) {
    try {
      // Shutdown does not wait for a sample in flight (up to storeTimeoutMs): it is dropped.
      const sample = await untilAborted(withTimeout(queue.stats(), storeTimeoutMs, 'stats'), stop);
      if (sample === ABORTED) return;
      obs.stats(sample);
    } catch (err) {
      if (!isClosed(err) && !stop.aborted) logger.warn(`${name}: sampling queue stats failed (${errorText(err)})`);
    }
    await sleep(intervalMs, stop);
  }
}

/** `promise`, or {@link ABORTED} as soon as `signal` aborts (the promise is left to settle on its own, its rejection handled). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.resolve(ABORTED);
  }
  return new Promise<T | typeof ABORTED>((resolve, reject) => {
    const onAbort = (): void => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}
