import type { DeadReason } from './retry-policy.js';

/** Why a failed delivery was retried: the handler threw, or it outran `publishTimeoutMs`. */
export type RetryReason = 'error' | 'timeout';

/** How one delivery attempt ended, as seen by the worker. */
export type PublishResult = 'ok' | 'error' | 'timeout' | 'permanent';

/**
 * Why the dispatcher let go of a row without recording its outcome; the row
 * is then redelivered after its lease (the duplicate windows of docs/outbox.md):
 * - `lease-lost`: a renewal or outcome write was fenced (the lease had lapsed or the row was reclaimed);
 * - `outcome-write`: the outcome write kept failing for `leaseMs`;
 * - `drain`: the delivery was still running (or unrecorded) at the end of the drain.
 */
export type AbandonReason = 'lease-lost' | 'outcome-write' | 'drain';

/**
 * The dispatcher's metrics hook. Every method receives the outbox name last;
 * the only other labels are the reason enums, never a message id or error
 * text (bounded cardinality). Implementations must not throw; a throw is
 * caught and ignored.
 */
export interface OutboxMetrics {
  /** Rows claimed by one claim. */
  claimed(count: number, outbox: string): void;
  /** A delivery succeeded (the handler resolved) after `durationMs`. Counted before its ack is written. */
  published(durationMs: number, outbox: string): void;
  /** A failed delivery was put back with a retry delay (counted once the store accepted it). */
  retried(reason: RetryReason, outbox: string): void;
  /** A message was dead-lettered (counted once the store accepted it). */
  dead(reason: DeadReason, outbox: string): void;
  /** Duration of every delivery attempt, whatever its result. */
  publishDuration(durationMs: number, result: PublishResult, outbox: string): void;
  /** Sampled `queue.stats().pending` (ready or delayed rows waiting to be claimed). */
  pending(count: number, outbox: string): void;
  /** Sampled `queue.stats().oldestPendingAgeMs`. */
  oldestPendingAgeMs(ageMs: number, outbox: string): void;
  /** The dispatcher let go of a row without recording its outcome. Optional. */
  abandoned?(reason: AbandonReason, outbox: string): void;
}

/** The default: records nothing. The dispatcher also skips stats sampling for it. */
export class NoopOutboxMetrics implements OutboxMetrics {
  claimed(): void {}
  published(): void {}
  retried(): void {}
  dead(): void {}
  publishDuration(): void {}
  pending(): void {}
  oldestPendingAgeMs(): void {}
  abandoned(): void {}
}

/** One shared no-op instance. */
export const NOOP_OUTBOX_METRICS: OutboxMetrics = Object.freeze(new NoopOutboxMetrics());
