/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * A signal that aborts when any of `signals` does, or after `ms`. Use it
 * instead of `AbortSignal.any([..., AbortSignal.timeout(ms)])`: Node 20's
 * `AbortSignal.any` holds its sources weakly, so a timeout source can be
 * garbage-collected and never fire, leaving the waiter asleep forever. Here
 * the timer owns its controller strongly. Call `clear()` when done waiting.
 */
export function abortAfter(ms: number, ...signals: AbortSignal[]): { signal: AbortSignal; clear: () => void } {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), Math.max(0, ms));
  return { signal: AbortSignal.any([...signals, timeout.signal]), clear: () => clearTimeout(timer) };
}
