import { InvalidArgument, InvalidOption } from '../contract/errors.js';
import { requireCount, requireInt } from '../contract/validate.js';

/** Options of {@link AdaptivePrefetch}. */
export interface AdaptivePrefetchOptions {
  /** Handler slots of the worker. */
  readonly concurrency: number;
  /** Largest buffer ever chosen. */
  readonly max: number;
  /**
   * Share of a claim's lease, counted from when the claim was sent, by which the last buffered job is planned
   * to have started at the measured handler rate (default {@link DEFAULT_LEASE_SHARE}). The worker still
   * releases a buffered job at half its lease.
   */
  readonly leaseShare?: number;
}

/** A buffered job is planned to start within a quarter of its lease: twice the margin of the half-lease release. */
export const DEFAULT_LEASE_SHARE = 0.25;

/** Weight of a new sample in the moving averages. */
const HANDLER_WEIGHT = 0.1;
const CLAIM_WEIGHT = 0.3;
/** Below the timer resolution a handler counts as this fast (ms): keeps the rate finite. */
const MIN_HANDLER_MS = 0.001;

/**
 * The prefetch a worker chooses by itself when the user set none: how many claimed jobs may wait in its
 * local buffer on top of the running ones. Pure bookkeeping, no timers: the worker reports handler
 * durations and claims, and reads {@link current}.
 *
 * - **Grows** (doubles, at least to `concurrency`) after a claim that came back full while the slots sat
 *   idle waiting for it (the buffer was empty and a slot free): the claim round trip, not the handlers,
 *   is the bottleneck.
 * - **Shrinks** (halves) after a claim that came back short: the backlog is gone, and a buffer would only
 *   take jobs away from other replicas.
 * - **Bounded** by {@link bound}: `max`; what the handlers get through during two claim round trips
 *   (more would wait longer than it saves); and what they get through in `leaseShare` of the lease less
 *   the claim round trip (the lease runs from when the claim was sent), so a buffered job is planned to
 *   start well within its lease, at half the time after which the worker would release it unstarted.
 */
export class AdaptivePrefetch {
  private size = 0;
  private handlerMs: number | null = null;
  private claimMs: number | null = null;
  private leaseMs: number | null = null;
  private readonly leaseShare: number;

  /**
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming `concurrency` (not an integer >= 1),
   *   `max` (not an integer >= 0) or `leaseShare` (not a number in (0, 0.5]); InvalidOption when `o` is not an object.
   */
  constructor(private readonly o: AdaptivePrefetchOptions) {
    if (o === null || typeof o !== 'object')
      throw new InvalidOption('AdaptivePrefetch options', 'must be an object with concurrency and max');
    requireCount('concurrency', o.concurrency);
    requireInt('max', o.max, 0, Number.MAX_SAFE_INTEGER);
    this.leaseShare = o.leaseShare ?? DEFAULT_LEASE_SHARE;
    if (typeof this.leaseShare !== 'number' || !(this.leaseShare > 0 && this.leaseShare <= 0.5)) {
      throw new InvalidArgument(
        'leaseShare',
        `must be a number in (0, 0.5], got ${typeof o.leaseShare === 'number' ? String(o.leaseShare) : typeof o.leaseShare}`,
      );
    }
  }

  /** The prefetch to use now. */
  get current(): number {
    return this.size;
  }

  /** Jobs per millisecond the handlers get through at the measured duration; null before the first one finished. */
  get rate(): number | null {
    return this.handlerMs === null ? null : this.o.concurrency / Math.max(MIN_HANDLER_MS, this.handlerMs);
  }

  /**
   * The largest prefetch allowed now: `max`; the jobs the handlers get through in two claim round trips;
   * and the jobs they get through in `leaseShare` of the latest lease minus one claim round trip. Before a
   * handler has finished only `concurrency`.
   */
  bound(): number {
    const rate = this.rate;
    if (rate === null) return Math.min(this.o.max, this.o.concurrency);
    const claimMs = this.claimMs ?? 0;
    let b = this.o.max;
    if (this.claimMs !== null) b = Math.min(b, Math.ceil(2 * rate * claimMs));
    if (this.leaseMs !== null)
      b = Math.min(b, Math.floor(rate * Math.max(0, this.leaseMs * this.leaseShare - claimMs)));
    return Math.max(0, b);
  }

  /** One handler call of one job took `ms`. */
  handled(ms: number): void {
    this.handlerMs = this.handlerMs === null ? ms : this.handlerMs + HANDLER_WEIGHT * (ms - this.handlerMs);
    if (this.size > 0) this.size = Math.min(this.size, this.bound());
  }

  /**
   * A claim asked for `asked` jobs and got `got` after `roundTripMs`, with leases of `leaseMs` (the
   * shortest); `starved`: a slot was free and the buffer empty when it came back. Returns the new prefetch.
   */
  claimed(asked: number, got: number, roundTripMs: number, leaseMs: number | null, starved: boolean): number {
    this.claimMs = this.claimMs === null ? roundTripMs : this.claimMs + CLAIM_WEIGHT * (roundTripMs - this.claimMs);
    if (leaseMs !== null) this.leaseMs = leaseMs;
    let next = this.size;
    if (got < asked) next = Math.floor(this.size / 2);
    else if (starved) next = Math.max(this.o.concurrency, this.size * 2);
    this.size = Math.min(next, this.bound());
    return this.size;
  }

  /** Buffered jobs waited half their lease and were given back: the buffer outran the handlers. */
  overran(): void {
    this.size = 0;
  }
}
