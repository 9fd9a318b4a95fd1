// The transactional outbox and its delivery receipts.
import type { JobOpts } from '../options.js';
import type { Job, Queue } from './queue.js';

/** A transactional outbox: a helper over its backing queue `__alkstore_outbox:<name>`. `T` is the payload type (default `unknown`). */
export interface Outbox<T = unknown> {
  readonly name: string;
  /** The backing queue (derived name, outbox defaults: visibility 60 s, 5 attempts). */
  readonly queue: Queue<T>;
  enqueue(payload: T, opts?: JobOpts): Promise<number>;
  /**
   * The message id of the row `rowId` (a job id of this outbox): `<storeId>:<rowId>`, or
   * `<messageIdPrefix>:<storeId>:<rowId>` with the store's `messageIdPrefix`. No other store
   * produces it, and every attempt of the row carries the same one: the publishers send it as the
   * broker's dedup id and the envelope's `messageId`; a delivery handler of your own should too.
   * A row enqueued before the store had an id keeps its bare row id (docs/brokers.md, Message ids).
   * Pure: no I/O.
   * @throws InvalidArgument when `rowId` is not a job id
   */
  messageId(rowId: number): string;
  /**
   * Pull one message: claim, run `delivery`, ack on success, retry with the
   * queue's backoff on a throw; a `PermanentError` dead-letters it at once
   * (`lastError` `permanent: <message>`, as the dispatcher writes it).
   * Resolves `false` when there was no work.
   */
  runOnce(workerId: string, delivery: (job: Job<T>) => Promise<void>): Promise<boolean>;
  /** Stores brokers' receipts of delivered messages (upsert by message id), on their own. */
  recordReceipts(receipts: readonly { readonly messageId: number; readonly receipt: DeliveryReceipt }[]): Promise<void>;
  /**
   * Acks delivered messages, each fenced by its claim token as in
   * `queue.ackBatch`, and stores their brokers' receipts (upsert by message
   * id) in the same write: the dispatcher's path, so a message is never acked
   * without its receipt. Every receipt is stored, whether or not its ack still
   * held the claim (the broker has the message either way). Resolves to how
   * many acks landed.
   */
  ackDelivered(
    deliveries: readonly { readonly job: Pick<Job, 'id' | 'claimToken'>; readonly receipt: DeliveryReceipt }[],
  ): Promise<number>;
  /** The broker's receipt of a delivered message, or null (not delivered through a publisher, or pruned). */
  receipt(messageId: number): Promise<StoredReceipt | null>;
  /** Deletes receipts delivered more than `olderThanMs` ago (database clock); resolves to how many. */
  pruneReceipts(olderThanMs: number): Promise<number>;
}

/**
 * What a broker confirmed for one published message: `broker` names it, the
 * other fields are its own (JetStream `stream`/`seq`/`duplicate`, RabbitMQ
 * `exchange`/`routingKey`/`confirmed`, Redis `entryId`, …).
 */
export interface DeliveryReceipt {
  readonly broker: string;
  readonly [field: string]: string | number | boolean;
}

/** A receipt as stored with its delivered message. */
export interface StoredReceipt {
  readonly outbox: string;
  readonly messageId: number;
  readonly receipt: DeliveryReceipt;
  /** Epoch ms, database clock. */
  readonly deliveredAt: number;
}
