// SQLite only: one write connection per store, so writes and application transactions take turns on an async mutex.
/**
 * An application transaction holding the write path across awaits
 * (`withTx(fn)`, `joinTransaction`): named in the errors of the
 * writes that wait for it, and revocable when a lease renewal has waited too
 * long for it.
 */
export interface Holder {
  /** How errors name it, e.g. `withTx(fn)`. */
  readonly label: string;
  /** `performance.now()` when it took the mutex. */
  readonly since: number;
  /** Rolls the transaction back and releases the mutex (see `TransactionTimeout`). */
  revoke(leaseMs: number): void;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout | null;
  urgent: boolean;
}

export interface AcquireOpts {
  /** Reject after this long in the queue (ms); the waiter leaves the queue. */
  timeoutMs?: number;
  /** The rejection after `timeoutMs`; given the holder at that moment. */
  onTimeout?: (holder: Holder | null) => Error;
  /** Queue before every non-urgent waiter (lease renewals). */
  urgent?: boolean;
}

/**
 * FIFO async mutex with deadlines. The store's write connection is one SQLite
 * connection, so every write (and an open application transaction, across
 * its awaits) takes turns on it.
 */
export class Mutex {
  private held = false;
  private readonly waiters: Waiter[] = [];
  /** The application transaction holding the mutex; null while it is free or held by a one-statement write. */
  holder: Holder | null = null;

  get locked(): boolean {
    return this.held;
  }

  /** Takes the mutex now when it is free and nobody queues; returns false otherwise. */
  tryAcquire(): boolean {
    if (this.held || this.waiters.length > 0) return false;
    this.held = true;
    return true;
  }

  acquire(opts: AcquireOpts = {}): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const w: Waiter = { resolve, reject, timer: null, urgent: opts.urgent === true };
      if (w.urgent) {
        const at = this.waiters.findIndex((x) => !x.urgent);
        this.waiters.splice(at < 0 ? this.waiters.length : at, 0, w);
      } else {
        this.waiters.push(w);
      }
      if (opts.timeoutMs !== undefined) {
        w.timer = setTimeout(() => {
          const i = this.waiters.indexOf(w);
          if (i < 0) return;
          this.waiters.splice(i, 1);
          reject(opts.onTimeout ? opts.onTimeout(this.holder) : new Error('mutex wait timed out'));
        }, opts.timeoutMs);
      }
    });
  }

  /** Hands the mutex to the next waiter, or frees it. */
  release(): void {
    this.holder = null;
    const next = this.waiters.shift();
    if (next) {
      if (next.timer) clearTimeout(next.timer);
      next.resolve();
    } else {
      this.held = false;
    }
  }
}
