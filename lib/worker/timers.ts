import { AlkstoreError } from '../contract/errors.js';
/** A store call that did not settle within `storeTimeoutMs`. Its effect may still land later. */
export class StoreCallTimeout extends AlkstoreError {
  constructor(
    readonly operation: string,
    readonly timeoutMs: number,
  ) {
    super('STORE_CALL_TIMEOUT', `${operation} did not complete within ${timeoutMs} ms`);
  }
}

/** A delivery outran `publishTimeoutMs`; also the `reason` of the handler's aborted signal. */
export class PublishTimeout extends AlkstoreError {
  constructor(readonly timeoutMs: number) {
    super('PUBLISH_TIMEOUT', `publish timed out after ${timeoutMs} ms`);
  }
}

/** Rejects with {@link StoreCallTimeout} when `promise` has not settled after `ms`; never cancels it. */
export function withTimeout<T>(promise: Promise<T>, ms: number, operation: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreCallTimeout(operation, ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * A one-shot "something changed" latch: `wait(ms, signal)` resolves on the
 * next `fire()`, after `ms`, or when `signal` aborts, whichever comes first.
 */
export class ChangeLatch {
  private waiters = new Set<() => void>();

  fire(): void {
    if (this.waiters.size === 0) return;
    const ws = [...this.waiters];
    this.waiters.clear();
    for (const w of ws) w();
  }

  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
      this.waiters.add(done);
    });
  }
}
