/**
 * FIFO async mutex. The store's write connection is one SQLite connection, so
 * every write (and an open `beginTx` handle, across its awaits) takes turns on it.
 */
export class Mutex {
  private held = false;
  private readonly waiters: (() => void)[] = [];

  get locked(): boolean {
    return this.held;
  }

  /** Takes the mutex now when it is free and nobody queues; returns false otherwise. */
  tryAcquire(): boolean {
    if (this.held || this.waiters.length > 0) return false;
    this.held = true;
    return true;
  }

  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Hands the mutex to the next waiter, or frees it. */
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.held = false;
  }
}
