import type { DeliveryReceipt, Job, Outbox, StoreLogger } from '../contract/types.js';
import { outboxMessage, type Publisher, type PublisherContext } from '../publishers/publisher.js';
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

/** Writes receipts of deliveries finished in one event-loop turn together, before their acks. */
class ReceiptWriter {
  private pending: { messageId: number; receipt: DeliveryReceipt; done: () => void; fail: (e: unknown) => void }[] = [];
  private scheduled = false;

  constructor(private readonly outbox: Outbox) {}

  add(messageId: number, receipt: DeliveryReceipt): Promise<void> {
    return new Promise((done, fail) => {
      this.pending.push({ messageId, receipt, done, fail });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private async flush(): Promise<void> {
    this.scheduled = false;
    const batch = this.pending.splice(0, 1000);
    if (this.pending.length > 0) {
      this.scheduled = true;
      setImmediate(() => void this.flush());
    }
    try {
      await this.outbox.recordReceipts(batch.map((b) => ({ messageId: b.messageId, receipt: b.receipt })));
      for (const b of batch) b.done();
    } catch (err) {
      for (const b of batch) b.fail(err);
    }
  }
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
  const receipts = new ReceiptWriter(outbox);
  return async (job, signal) => {
    const receipt = await publish(job, signal);
    await receipts.add(job.id, receipt);
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
