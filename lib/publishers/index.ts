/**
 * Publishers: deliver outbox messages to real brokers, configured on an
 * outbox dispatcher instead of a handler. Each broker client is an optional
 * peer, imported only when its publisher connects.
 */
export type { Publisher, PublisherContext, PublisherHealth, OutboxMessage } from './publisher.js';
export { outboxMessage } from './publisher.js';
export { compileDestination, TEMPLATE_FIELDS, type Destination } from './subject.js';
export { NatsJetStreamPublisher, type NatsJetStreamPublisherOptions } from './nats-jetstream.js';
export { RabbitMqPublisher, type RabbitMqPublisherOptions } from './rabbitmq.js';
export { MqttPublisher, MQTT_MESSAGE_ID_PROPERTY, type MqttPublisherOptions } from './mqtt.js';
export {
  RedisStreamsPublisher,
  REDIS_NO_DEDUP,
  REDIS_IDMP_DEFAULT_DURATION_S,
  type RedisStreamsPublisherOptions,
  type RedisDedup,
} from './redis-streams.js';
export {
  ClientProxyPublisher,
  type ClientProxyPublisherOptions,
  type ClientProxyLike,
  type OutboxEvent,
} from './client-proxy.js';
