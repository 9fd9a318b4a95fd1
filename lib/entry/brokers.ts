/**
 * `nestjs-alkstore/brokers`: publishers that deliver outbox messages to real brokers (NATS JetStream,
 * RabbitMQ, MQTT, Redis Streams, a Nest `ClientProxy`), and broker consumers with an inbox, whose
 * message effects run in the transaction that claims the message id. Each broker client is an optional
 * peer, imported only when its publisher or consumer connects. The Nest wiring (`AlkstoreBrokersModule`,
 * `@InboxHandler`) is in `nestjs-alkstore/nest`.
 */
export * from '../publishers/index.js';
export { JetStreamInboxConsumer, type JetStreamInboxConsumerOptions } from '../inbox/jetstream-consumer.js';
export { RabbitMqInboxConsumer, type RabbitMqInboxConsumerOptions } from '../inbox/rabbitmq-consumer.js';
export {
  InboxRunner,
  type InboxResult,
  type InboxMessage,
  type InboxHandlerFn,
  type InboxOutcome,
  type InboxConsumerBase,
} from '../inbox/inbox-message.js';
