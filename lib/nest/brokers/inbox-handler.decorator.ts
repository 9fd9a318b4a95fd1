import type { TxOps } from '../../contract/types.js';
import type { InboxMessage } from '../../inbox/inbox-message.js';
import type { TypedMethodDecorator } from '../decorators/typed-method-decorator.js';
import { appendMethodMetadata } from '../utils/append-metadata.js';
import { INBOX_HANDLER_METADATA } from './brokers.constants.js';
import type { InboxHandlerMetadata, InboxHandlerOptions } from './brokers-options.interface.js';

/**
 * Consumes a broker through the inbox `inbox`: `AlkstoreBrokersModule` runs one
 * consumer per decorated method (a JetStream pull consumer or a RabbitMQ
 * queue, see {@link InboxHandlerOptions}). Each message's id is claimed in
 * the inbox and the method runs in that same transaction, called with
 * `(tx, message, handle)`; the broker message is acknowledged only after the
 * transaction committed. Resolve to commit; throw to roll back (the message
 * is redelivered, and dead once the inbox's `maxAttempts` is reached:
 * JetStream `term()`, RabbitMQ rejected to the queue's dead-letter exchange).
 * A message whose id is already done is acknowledged without calling the method.
 * `InboxHandler<T>(…)` checks the method takes an `InboxMessage<T>`; without `T`
 * the method declares its payload type itself.
 *
 * ```ts
 * @InboxHandler('billing', { jetstream: { stream: 'ORDERS', consumer: 'billing' } })
 * async invoice(tx: TxOps, message: InboxMessage<{ orderId: number }>) { await tx.enqueue('invoices', message.payload); }
 * ```
 */
export function InboxHandler<T = never>(
  inbox: string,
  options: InboxHandlerOptions,
): TypedMethodDecorator<(tx: TxOps, message: InboxMessage<T>, handle?: never) => Promise<unknown>> {
  const meta: InboxHandlerMetadata = { inbox, options };
  return appendMethodMetadata(INBOX_HANDLER_METADATA, meta) as TypedMethodDecorator<
    (tx: TxOps, message: InboxMessage<T>, handle?: never) => Promise<unknown>
  >;
}
