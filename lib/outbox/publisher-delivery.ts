import type { DeliveryReceipt, Job, Outbox, StoreLogger } from '../contract/types.js';
import { outboxMessage, type Publisher, type PublisherContext } from '../publishers/publisher.js';
import { AckBatcher } from '../worker/ack-batcher.js';
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
    terms: `leaseMs ${settings.leaseMs} + publishTimeoutMs ${settings.publishTimeoutMs} + longest retry backoff ${longestBackoff} + restartAllowanceMs ${restartAllowanceMs}`,
  };
}

interface PendingReceipt {
  readonly messageId: number;
  readonly receipt: DeliveryReceipt;
  readonly done: () => void;
  readonly fail: (err: unknown) => void;
}

/**
 * Writes receipts before their acks, batched like the acks themselves
 * ({@link AckBatcher}): what finished in one event-loop turn shares a write,
 * and what finishes while a write is in flight forms the next one.
 */
function receiptWriter(outbox: Outbox): (messageId: number, receipt: DeliveryReceipt) => Promise<void> {
  const batcher = new AckBatcher<PendingReceipt>({
    maxBatch: 1000,
    write: async (items) => {
      await outbox.recordReceipts(items.map((r) => ({ messageId: r.messageId, receipt: r.receipt })));
      return items.length;
    },
    landed: (items) => {
      for (const r of items) r.done();
    },
    failed: (items, err) => {
      for (const r of items) r.fail(err);
    },
  });
  return (messageId, receipt) => new Promise((done, fail) => batcher.add({ messageId, receipt, done, fail }));
}

/**
 * The delivery of a publisher-backed dispatcher: publish, then store the
 * broker's receipt; the dispatcher acks after both. A receipt write that fails
 * fails the delivery, so it is retried (and the broker's dedup id absorbs the
 * republish): an acked message always has its receipt. `pause()` is the
 * dispatcher's outage signal of the moment: its abort (a broker outage began)
 * aborts the publish too.
 */
export function publisherDelivery(publisher: Publisher, outbox: Outbox, storeReceipts: boolean, pause: () => AbortSignal): (job: Job, signal: AbortSignal) => Promise<void> {
  const publish = async (job: Job, signal: AbortSignal): Promise<DeliveryReceipt> => {
    const paused = pause();
    const either = new AbortController();
    const onAbort = (): void => either.abort(signal.aborted ? signal.reason : paused.reason);
    if (signal.aborted || paused.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    paused.addEventListener('abort', onAbort, { once: true });
    try {
      return await publisher.publish(outboxMessage(outbox.name, job), either.signal);
    } finally {
      signal.removeEventListener('abort', onAbort);
      paused.removeEventListener('abort', onAbort);
    }
  };
  if (!storeReceipts) {
    return async (job, signal) => {
      await publish(job, signal);
    };
  }
  const record = receiptWriter(outbox);
  return async (job, signal) => {
    const receipt = await publish(job, signal);
    await record(job.id, receipt);
  };
}

/** The context a dispatcher hands its publisher. */
export function publisherContext(outbox: string, settings: OutboxSettings, restartAllowanceMs: number, logger: StoreLogger, metrics: OutboxMetrics | undefined): PublisherContext {
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
