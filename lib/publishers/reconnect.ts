import { InvalidOption } from '../contract/errors.js';

/** Logs a connection failure once per outage (the first failure after being up, or at startup). */
export class OutageLog {
  private reported = false;
  detail: string | undefined;

  constructor(
    private readonly warn: (message: string) => void,
    private readonly what: string,
  ) {}

  failed(err: unknown): void {
    this.detail = err instanceof Error ? err.message : String(err);
    if (this.reported) return;
    this.reported = true;
    this.warn(`${this.what} is unreachable (${this.detail}); messages stay pending and the publisher keeps retrying`);
  }

  recovered(): void {
    this.reported = false;
    this.detail = undefined;
  }
}

/** Sleeps `ms` unless `signal` aborts first (resolves either way). */
export function pauseUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** How {@link connectWithRetry} retries. */
export interface RetryConnect {
  readonly outage: OutageLog;
  /** Pause between attempts (ms). */
  readonly waitMs: number;
  readonly signal: AbortSignal;
  /** True once the publisher was closed: stop trying. */
  readonly stopped: () => boolean;
  /** Undoes a failed attempt (closes what it opened). Runs before the pause, and before an `InvalidOption` is rethrown. */
  readonly cleanup?: () => Promise<void> | void;
}

/**
 * The publishers' connect loop: runs `attempt` until it resolves (the outage
 * is then marked recovered), `signal` aborts or the publisher is closed. A
 * failure is logged once per outage and paused on; an {@link InvalidOption}
 * (the broker refuses the configuration: a missing stream, a short dedup
 * window) is not retried and rejects.
 */
export async function connectWithRetry(attempt: () => Promise<void>, o: RetryConnect): Promise<void> {
  while (!o.signal.aborted && !o.stopped()) {
    try {
      await attempt();
      o.outage.recovered();
      return;
    } catch (err) {
      await o.cleanup?.();
      if (err instanceof InvalidOption) throw err;
      o.outage.failed(err);
      await pauseUnlessAborted(o.waitMs, o.signal);
    }
  }
}
