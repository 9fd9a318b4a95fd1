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
 * A signal that aborts when any of `signals` does (with its reason), or after `ms` (`null`: no
 * timer). Call `clear()` when done waiting: it stops the timer and removes the listeners this added
 * to `signals`, so a long-lived signal combined once per poll holds nothing of the polls it outlived.
 *
 * Not `AbortSignal.any`: Node 20 keeps, in each source signal, a reference to every signal `any` ever
 * made from it (its set of dependants is never pruned), so a worker's stop signal combined once a
 * second grows by one entry a second for the life of the process; and a timeout source
 * (`AbortSignal.timeout`) can be garbage-collected and never fire, leaving the waiter asleep. Here the
 * timer owns its controller strongly, and the links are plain listeners that `clear()` removes.
 */
export function abortAfter(ms: number | null, ...signals: AbortSignal[]): { signal: AbortSignal; clear: () => void } {
  const linked = new AbortController();
  const onAbort = (ev: Event): void => linked.abort((ev.target as AbortSignal).reason);
  const sources: AbortSignal[] = [];
  for (const s of signals) {
    if (s.aborted) {
      linked.abort(s.reason);
      break;
    }
    s.addEventListener('abort', onAbort, { once: true });
    sources.push(s);
  }
  const timer = ms === null || linked.signal.aborted ? null : setTimeout(() => linked.abort(), Math.max(0, ms));
  return {
    signal: linked.signal,
    clear: () => {
      if (timer !== null) clearTimeout(timer);
      for (const s of sources) s.removeEventListener('abort', onAbort);
      sources.length = 0;
    },
  };
}
