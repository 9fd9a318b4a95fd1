import type { DeliveryReceipt, Job, Outbox, Queue, StoreLogger } from '../contract/types.js';
import { outboxMessage, type Publisher, type PublisherContext } from '../publishers/publisher.js';
import { checkReceipt, OutboxHandle, type DeliveredAcker } from '../internal/outbox-handle.js';
import type { OutboxMetrics } from './outbox-metrics.js';
import type { OutboxSettings } from './outbox-settings.js';

/** Default allowance for a dispatcher restart in the retry horizon (ms). */
export const DEFAULT_RESTART_ALLOWANCE_MS = 60_000;

/**
 * How long after a first publish the same message may be published again:
 * the lease (a crash or a lapsed lease), the publish timeout (a publish that
 * timed out but landed), the longest retry backoff, and a restart allowance.
 */
export function retryHorizon(settings: OutboxSettings, restartAllowanceMs: number): { ms: number; terms: string } {
  const r = settings.retry;
  const longestBackoff = r.maxAttempts < 2 ? 0 : Math.min(r.maxDelayMs, r.baseMs * 2 ** (r.maxAttempts - 2));
  const ms = settings.leaseMs + settings.publishTimeoutMs + longestBackoff + restartAllowanceMs;
  return {
    ms,
    terms:
      `leaseMs ${settings.leaseMs} + publishTimeoutMs ${settings.publishTimeoutMs} + longest retry backoff ` +
      `${longestBackoff} + restartAllowanceMs ${restartAllowanceMs}`,
  };
}

/** What a publisher-backed delivery reports to its dispatcher. */
export interface DeliveryHost {
  /** Why deliveries are paused (a broker outage began), or null: a delivery that starts meanwhile fails at once. */
  paused(): unknown;
  /** A publish succeeded (its receipt accepted). */
  delivered(): void;
  /** A publish (or its receipt) failed. */
  failed(err: unknown): void;
}

/** A broker receipt checked as `Outbox.ackDelivered` checks it, with the text it is stored as (encoded once). */
export class CheckedReceipt {
  constructor(
    readonly receipt: DeliveryReceipt,
    readonly text: string,
  ) {}
}

/**
 * The delivery of a publisher-backed dispatcher: publish with the job's own
 * signal, and resolve to the broker's receipt (a {@link CheckedReceipt}, checked
 * as `Outbox.ackDelivered` will store it), which the dispatcher writes with the ack in one statement;
 * or, without `storeReceipts`, to nothing (a plain ack). A receipt write that
 * fails fails the ack, so the message runs again (and the broker's dedup id
 * absorbs the republish): an acked message always has its receipt. The job's
 * signal aborts on the publish timeout, a lost lease, shutdown, and a broker
 * outage (the dispatcher aborts every publish in flight when one begins).
 */
export function publisherDelivery(
  publisher: Publisher,
  outbox: Outbox,
  storeReceipts: boolean,
  host: DeliveryHost,
): (job: Job, signal: AbortSignal) => Promise<CheckedReceipt | undefined> {
  return async (job, signal) => {
    try {
      const paused = host.paused();
      if (paused !== null) throw paused;
      const receipt = await publisher.publish(outboxMessage(outbox, job), signal);
      // A receipt the store would refuse fails this delivery (retried, then dead), not the ack write.
      const checked = storeReceipts ? new CheckedReceipt(receipt, checkReceipt(receipt)) : undefined;
      host.delivered();
      return checked;
    } catch (err) {
      host.failed(err);
      throw err;
    }
  };
}

/**
 * Acks with receipts: each job beside the receipt its delivery resolved to. On this package's own outbox
 * handle, straight to its backing queue's one-write ack with the receipt texts the deliveries encoded
 * (`Outbox.ackDelivered` would check and encode each receipt again); on any other, `ackDelivered`.
 */
export function receiptAcks(outbox: Outbox): (jobs: readonly Job[], results: readonly unknown[]) => Promise<number> {
  const queue = outbox.queue as Queue & Partial<DeliveredAcker>;
  if (outbox instanceof OutboxHandle && typeof queue.ackDelivered === 'function') {
    const name = outbox.name;
    return (jobs, results) =>
      queue.ackDelivered!(
        jobs,
        name,
        jobs.map((job, i) => ({ messageId: job.id, receiptText: (results[i] as CheckedReceipt).text })),
      );
  }
  return (jobs, results) =>
    outbox.ackDelivered(jobs.map((job, i) => ({ job, receipt: (results[i] as CheckedReceipt).receipt })));
}

/** The context a dispatcher hands its publisher. */
export function publisherContext(
  outbox: string,
  settings: OutboxSettings,
  restartAllowanceMs: number,
  logger: StoreLogger,
  metrics: OutboxMetrics | undefined,
): PublisherContext {
  const h = retryHorizon(settings, restartAllowanceMs);
  const safe = (fn: (() => void) | undefined) => () => {
    try {
      fn?.();
    } catch {
      // Metrics never break a delivery.
    }
  };
  return Object.freeze({
    outbox,
    logger,
    retryHorizonMs: h.ms,
    horizonTerms: h.terms,
    publishTimeoutMs: settings.publishTimeoutMs,
    onBrokerDuplicate: safe(metrics?.brokerDuplicate ? () => metrics.brokerDuplicate!(outbox) : undefined),
    onLateConfirm: safe(metrics?.lateConfirm ? () => metrics.lateConfirm!(outbox) : undefined),
  });
}
