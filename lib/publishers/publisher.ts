import { readEnvelope, type MessageEnvelope } from '../contract/envelope.js';
import type { JobHeaders } from '../contract/job-extras.js';
import type { DeliveryReceipt, Job, Outbox, StoreLogger } from '../contract/types.js';

/** One outbox message as a publisher sees it. */
export interface OutboxMessage {
  /**
   * The message id, unique across stores (`[<messageIdPrefix>:]<storeId>:<rowId>`, see
   * `Outbox.messageId`): the broker's dedup id where it has one, the envelope's `messageId`, and
   * the key a consumer's inbox dedupes on. The same on every attempt of the message.
   */
  readonly id: string;
  /** The outbox row id (the job id), unique in this store only: what receipts are keyed by. */
  readonly rowId: number;
  readonly outbox: string;
  readonly payload: unknown;
  /** Every header of the message, the envelope's included. */
  readonly headers: JobHeaders;
  /** The envelope read from the headers (type, version, content type, correlation and causation ids). */
  readonly envelope: MessageEnvelope;
  /** Delivery attempts so far, this one included. */
  readonly attempts: number;
  /** The message's `orderingKey` (the template field `{key}`), or null. */
  readonly key: string | null;
}

/** What a dispatcher tells its publisher when it connects. */
export interface PublisherContext {
  readonly outbox: string;
  readonly logger: StoreLogger;
  /**
   * How long after a first publish the dispatcher may publish the same message
   * again: lease + publish timeout + the longest retry backoff + a restart
   * allowance. A broker dedup window shorter than this is refused.
   */
  readonly retryHorizonMs: number;
  /** The dispatcher's publish timeout: a publisher's own confirm timeout should not be shorter. */
  readonly publishTimeoutMs: number;
  /** The terms of {@link retryHorizonMs}, for error messages. */
  readonly horizonTerms: string;
  /** Called when the broker answers a publish as a duplicate of one it already has (absorbed by the dedup id). */
  readonly onBrokerDuplicate: () => void;
  /** Called when a publish that had timed out is confirmed afterwards: the fourth duplicate window. */
  readonly onLateConfirm: () => void;
}

/** A publisher's view of its connection, for health checks. */
export interface PublisherHealth {
  /** `up`: connected; `degraded`: connecting or reconnecting (messages stay pending); `down`: closed. */
  readonly status: 'up' | 'degraded' | 'down';
  /** Why it is not up (the last connection error), if known. */
  readonly detail?: string;
}

/**
 * Delivers outbox messages to a broker. Configured on an outbox dispatcher
 * instead of a handler (`new OutboxDispatcher({ store, outbox, publisher })`).
 *
 * `publish` resolves only on the broker's durable acknowledgment and returns
 * its receipt, which the dispatcher stores with the delivered message; it
 * throws to retry, or a `PermanentError` for a message the broker can never
 * take (too large, unroutable by configuration).
 */
export interface Publisher {
  /** A short broker name, also the receipt's `broker` field (`nats-jetstream`, `rabbitmq`, …). */
  readonly broker: string;
  /**
   * Connects, retrying until it succeeds or `signal` aborts (a server that is
   * down is logged once and retried: messages stay pending meanwhile), then
   * checks the broker's configuration against `ctx` (a dedup window shorter than
   * the retry horizon rejects with `InvalidOption` naming both numbers).
   */
  connect(ctx: PublisherContext, signal: AbortSignal): Promise<void>;
  publish(message: OutboxMessage, signal: AbortSignal): Promise<DeliveryReceipt>;
  health(): PublisherHealth;
  /** Closes the connection it opened (a client passed in by the caller is left open). */
  close(): Promise<void>;
}

/** The {@link OutboxMessage} of a claimed job of `outbox` (its id from `outbox.messageId`). */
export function outboxMessage(outbox: Pick<Outbox, 'name' | 'messageId'>, job: Job): OutboxMessage {
  const id = outbox.messageId(job.id);
  return Object.freeze({
    id,
    rowId: job.id,
    outbox: outbox.name,
    payload: job.payload,
    headers: job.headers,
    envelope: readEnvelope(id, job.headers),
    attempts: job.attempts,
    key: job.orderingKey,
  });
}
