import { InvalidOption } from '../contract/errors.js';
import type { MessageEnvelope } from '../contract/envelope.js';
import type { Inbox, Store, StoreLogger, TxOpen, TxOps } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';

/** A broker message handed to an inbox handler. */
export interface InboxMessage<T = unknown> {
  /** The producer's message id (the outbox id): the inbox key. */
  readonly messageId: string;
  /** The JSON-decoded body. */
  readonly payload: T;
  readonly envelope: MessageEnvelope;
  /** Subject (NATS) or routing key (RabbitMQ). */
  readonly destination: string;
  /** How many times the broker has delivered it, this time included (1 on RabbitMQ's first delivery, 2 for any redelivery). */
  readonly deliveryCount: number;
}

/**
 * The effect of one message, run inside the transaction that claims it. Throw to roll back and retry.
 * `handle` is the ORM's transaction handle when the consumer's `transaction` is an ORM's `open`.
 */
export type InboxHandlerFn<T = unknown> = (tx: TxOps, message: InboxMessage<T>, handle?: unknown) => Promise<void>;

/** How the claim and the effect share one transaction: the store's own, or the joined one of an ORM. */
type InboxTransaction = <R>(fn: (tx: TxOps, handle?: unknown) => Promise<R>) => Promise<R>;

/** What a consumer does with the broker message once the inbox decided. */
export type InboxOutcome = 'ack' | 'retry' | 'dead';

/** What {@link InboxRunner.process} decided: the outcome, and for a failure its text and the error itself. */
export interface InboxResult {
  readonly outcome: InboxOutcome;
  readonly error?: string;
  readonly cause?: unknown;
}

/** Options shared by the broker inbox consumers. */
export interface InboxConsumerBase<T> {
  readonly store: Store;
  /** The inbox (or its name, opened with default options). */
  readonly inbox: Inbox | string;
  readonly handler: InboxHandlerFn<T>;
  /**
   * The `open` of the ORM whose transaction the claim and the effect share (`openTypeOrm(dataSource)`,
   * `openPrisma(prisma)`, … from `nestjs-alkstore`): `store.joinTransaction(open, …)`, and the ORM's
   * handle reaches the handler as its third argument. Default: the store's own, `store.withTx`.
   */
  readonly transaction?: TxOpen<unknown>;
  readonly logger?: StoreLogger;
}

const defaultLogger: StoreLogger = {
  log: () => undefined,
  warn: (m) => console.warn(`[alkstore inbox] ${m}`),
  error: (m, e) => console.error(`[alkstore inbox] ${m}`, e ?? ''),
};

/** The part both consumers share: claim and effect in one transaction, then what to tell the broker. */
export class InboxRunner<T> {
  readonly inbox: Inbox;
  readonly logger: StoreLogger;
  private readonly tx: InboxTransaction;
  private readonly handler: InboxHandlerFn<T>;

  constructor(o: InboxConsumerBase<T>) {
    if (o === null || typeof o !== 'object') throw new InvalidOption('options', 'must be an object');
    if (!o.store || typeof o.store.inbox !== 'function') throw new InvalidOption('store', 'must be an alkstore Store');
    if (typeof o.handler !== 'function')
      throw new InvalidOption('handler', 'must be a function (tx, message) => Promise<void>');
    if (o.transaction !== undefined && typeof o.transaction !== 'function')
      throw new InvalidOption(
        'transaction',
        'must be the open of your ORM from nestjs-alkstore, e.g. openTypeOrm(dataSource)',
      );
    this.inbox = typeof o.inbox === 'string' ? o.store.inbox(o.inbox) : o.inbox;
    this.handler = o.handler;
    const store = o.store;
    const open = o.transaction;
    this.tx = open
      ? <R>(fn: (tx: TxOps, handle?: unknown) => Promise<R>) => store.joinTransaction(open, fn)
      : <R>(fn: (tx: TxOps) => Promise<R>) => store.withTx(fn);
    this.logger = o.logger ?? defaultLogger;
  }

  /**
   * Claims and runs the effect in one transaction. `ack` once it committed (or
   * the id was already done), `dead` for a message the inbox gave up on, else
   * `retry` after recording the failure.
   */
  process(message: InboxMessage<T>): Promise<InboxResult> {
    return this.processWith(message, this.handler);
  }

  /** {@link process} with another effect for this one message (the Nest `@InboxEvent` glue runs the decorated method). */
  async processWith(message: InboxMessage<T>, handler: InboxHandlerFn<T>): Promise<InboxResult> {
    try {
      const claim = await this.tx(async (tx, handle) => {
        const c = await this.inbox.claim(tx, message.messageId);
        if (c === 'claimed') await handler(tx, message, handle);
        return c;
      });
      return { outcome: claim === 'dead' ? 'dead' : 'ack' };
    } catch (err) {
      const text = errorText(err);
      try {
        const f = await this.inbox.fail(message.messageId, err);
        return { outcome: f === 'dead' ? 'dead' : 'retry', error: text, cause: err };
      } catch (recordErr) {
        this.logger.warn(
          `inbox ${JSON.stringify(this.inbox.name)}: recording a failure of message ${JSON.stringify(message.messageId)} failed: ${errorText(recordErr)}`,
        );
        return { outcome: 'retry', error: text, cause: err };
      }
    }
  }
}

/** Decodes a JSON body; a body that is not JSON is handed over as its text. */
export function decodeBody(bytes: Uint8Array): unknown {
  const text = Buffer.from(bytes).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
