export * from './brokers.constants.js';
export * from './alkstore-brokers.module.js';
export { AlkstoreBrokersHost } from './alkstore-brokers.host.js';
export { InboxHandler } from './inbox-handler.decorator.js';
export { InboxEvent, InboxEventInterceptor, InboxTx, InboxTxHandle, type InboxEventOptions } from './inbox-event.js';
export type {
  AlkstoreBrokersOptions,
  AlkstoreBrokersAsyncOptions,
  OutboxPublisherRegistration,
  InboxSource,
  InboxHandlerOptions,
  InboxHandlerMetadata,
  InboxTransactionKind,
} from './brokers-options.interface.js';
