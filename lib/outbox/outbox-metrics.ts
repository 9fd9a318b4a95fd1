import type { DeadReason, HandlerResult, RetryReason, WorkerObserver } from '../worker/worker-observer.js';

export type { RetryReason };

/** How one delivery attempt ended, as seen by the worker. */
export type PublishResult = HandlerResult;

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
  /** A publisher's broker answered a publish as a duplicate it already stored (absorbed by the dedup id). Optional. */
  brokerDuplicate?(outbox: string): void;
  /**
   * A publish that had already timed out (and will be retried) was confirmed by
   * the broker afterwards: the fourth duplicate window. Optional.
   */
  lateConfirm?(outbox: string): void;
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
  brokerDuplicate(): void {}
  lateConfirm(): void {}
}

/** One shared no-op instance. */
export const NOOP_OUTBOX_METRICS: OutboxMetrics = Object.freeze(new NoopOutboxMetrics());

/** The seam observer that feeds an {@link OutboxMetrics} (what the dispatcher builds from its `metrics` option). */
export function outboxMetricsObserver(m: OutboxMetrics, outbox: string): WorkerObserver {
  return {
    claimed: (count) => m.claimed(count, outbox),
    completed: (_job, ms) => {
      m.publishDuration(ms, 'ok', outbox);
      m.published(ms, outbox);
    },
    failed: (_job, _err, ms, result) => m.publishDuration(ms, result, outbox),
    retried: (_job, reason) => m.retried(reason, outbox),
    dead: (_job, reason) => m.dead(reason, outbox),
    leaseLost: () => m.abandoned?.('lease-lost', outbox),
    abandoned: (_job, reason) => m.abandoned?.(reason, outbox),
    stats: (st) => {
      m.pending(st.pending, outbox);
      m.oldestPendingAgeMs(st.oldestPendingAgeMs, outbox);
    },
  };
}
