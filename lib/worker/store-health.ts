import { AlkstoreError } from '../contract/errors.js';
import type { StoreLogger } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';

// Store errors seen by the worker core: the backoff they earn and the closed store that ends the loop.

/** True for the store's `CLOSED` error (the store was closed under the worker). */
export function isClosed(err: unknown): boolean {
  return err instanceof AlkstoreError && err.code === 'CLOSED';
}

/** Counts consecutive store errors for the backoff and notices a closed store. */
export class StoreHealth {
  /** Consecutive failed store calls (0 after one that succeeded). */
  failures = 0;
  /** The store was closed: the worker stops. */
  closed = false;

  constructor(
    private readonly name: string,
    private readonly logger: StoreLogger,
    private readonly firstBackoffMs: number,
    private readonly maxBackoffMs: number,
    /** Called when the store is found closed (wakes the waiting loop). */
    private readonly onClosed: () => void,
  ) {}

  /** A store call succeeded. */
  ok(): void {
    this.failures = 0;
  }

  reset(): void {
    this.failures = 0;
    this.closed = false;
  }

  /** The pause before the next try: `firstBackoffMs`, doubling per consecutive failure up to `maxBackoffMs`. */
  backoffMs(): number {
    const n = Math.max(1, this.failures);
    return Math.min(this.firstBackoffMs * 2 ** Math.min(n - 1, 30), Math.max(this.firstBackoffMs, this.maxBackoffMs));
  }

  /** Logs a store error and counts it for the backoff; true when the store is closed (the loop ends). */
  note(operation: string, err: unknown): boolean {
    if (isClosed(err)) {
      if (!this.closed) this.logger.warn(`${this.name}: the store is closed; the worker stops`);
      this.closed = true;
      this.onClosed();
      return true;
    }
    this.failures += 1;
    this.logger.warn(`${this.name}: ${operation} failed; retrying in ${this.backoffMs()} ms (${errorText(err)})`);
    return false;
  }
}
