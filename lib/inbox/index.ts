/**
 * Broker consumers with an inbox: each message's effect runs in the
 * transaction that claims its id, and the broker is acknowledged only after
 * that transaction commits (effectively-once for effects in the transaction,
 * at-least-once for everything else). The inbox itself is `store.inbox(name)`.
 */
export { JetStreamInboxConsumer, type JetStreamInboxConsumerOptions } from './jetstream-consumer.js';
export { RabbitMqInboxConsumer, type RabbitMqInboxConsumerOptions } from './rabbitmq-consumer.js';
export {
  InboxRunner,
  type InboxResult,
  type InboxMessage,
  type InboxHandlerFn,
  type InboxOutcome,
  type InboxConsumerBase,
} from './inbox-message.js';
export type { Inbox, InboxOpts, InboxClaim, InboxFailure, InboxEntry, InboxSettings } from '../contract/index.js';
