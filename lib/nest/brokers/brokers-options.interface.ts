import type { ModuleMetadata, FactoryProvider } from '@nestjs/common';
import type { ConnectionOptions, NatsConnection } from '@nats-io/transport-node';
import type { Options } from 'amqplib';
import type { InboxOpts } from '../../contract/inbox.js';
import type { OutboxMetrics, OutboxSettings, OutboxSettingsInput } from '../../outbox/index.js';
import type { Publisher } from '../../publishers/publisher.js';
import type { HandlerOptions } from '../interfaces/handler-options.interface.js';

/** One outbox delivered by a broker publisher instead of an `@OutboxHandler`. */
export interface OutboxPublisherRegistration {
  /** The outbox whose messages the publisher delivers. */
  readonly outbox: string;
  /**
   * Builds the publisher (`() => new NatsJetStreamPublisher({ … })`). A function, not an instance: a
   * dispatcher closes its publisher when it stops, and a restarted one gets a fresh connection.
   */
  readonly publisher: () => Publisher;
  /** Dispatcher settings over the defaults (and the module's `drainTimeoutMs` / `idlePollIntervalMs`). */
  readonly settings?: OutboxSettings | OutboxSettingsInput;
  /** Store each broker receipt with its ack, in the ack's own statement (default true). */
  readonly receipts?: boolean;
  /** The restart allowance of the retry horizon checked against the broker's dedup window (default 60 000 ms). */
  readonly restartAllowanceMs?: number;
  readonly metrics?: OutboxMetrics;
}

/** Options of `AlkstoreBrokersModule.forRoot` (or what `forRootAsync` resolves to). */
export interface AlkstoreBrokersOptions {
  /** Outboxes delivered by publishers: one dispatcher each, started at bootstrap, drained on `app.close()`. */
  readonly publishers?: readonly OutboxPublisherRegistration[];
  /**
   * NATS for `@InboxHandler({ jetstream })` consumers: a connection you own (left open), or servers to
   * connect to (the module opens one connection and closes it on shutdown).
   */
  readonly nats?:
    | { readonly connection: NatsConnection }
    | { readonly servers: string | string[]; readonly connectOptions?: Partial<ConnectionOptions> };
  /** RabbitMQ for `@InboxHandler({ rabbitmq })` consumers (default `amqp://guest:guest@127.0.0.1:5672`). */
  readonly rabbitmq?: { readonly url?: string | Options.Connect; readonly reconnectWaitMs?: number };
  /** Options of the inboxes the handlers name (`store.inbox(name, opts)`), by name. */
  readonly inboxes?: Readonly<Record<string, InboxOpts>>;
}

/** Options of `AlkstoreBrokersModule.forRootAsync`. */
export interface AlkstoreBrokersAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  readonly useFactory: (...args: never[]) => AlkstoreBrokersOptions | Promise<AlkstoreBrokersOptions>;
  readonly inject?: FactoryProvider['inject'];
}

/** Where an `@InboxHandler` consumes from: a JetStream pull consumer or a RabbitMQ queue. */
export type InboxSource =
  | {
      /** A durable pull consumer with explicit acks (`stream`, `consumer`), on the module's `nats` connection. */
      readonly jetstream: {
        readonly stream: string;
        readonly consumer: string;
        /** Most messages one fetch takes (default 64). */
        readonly claimSize?: number;
        /** How often `working()` extends the ack wait while the method runs (default 5000 ms; below `ack_wait`). */
        readonly workingIntervalMs?: number;
        /** Redelivery delay after a failed attempt (default 1000 ms). */
        readonly retryDelayMs?: number;
      };
      readonly rabbitmq?: never;
    }
  | {
      /** A queue (declare it, with `x-dead-letter-exchange` for dead messages), on the module's `rabbitmq` URL. */
      readonly rabbitmq: { readonly queue: string };
      readonly jetstream?: never;
    };

/**
 * The transaction the claim and the effect share: `'store'` (default, `store.withTx`) or `'orm'`
 * (`store.joinTransaction` with the module's `orm` option, TypeORM's DataSource by default: the
 * method's third argument is the ORM's transaction handle, e.g. the `EntityManager`).
 */
export type InboxTransactionKind = 'store' | 'orm';

/**
 * Options of `@InboxHandler(inbox, options)`: the source, the transaction, and of the shared handler
 * options `concurrency` (RabbitMQ: messages handled at once, the channel's prefetch, default 16; a
 * JetStream consumer handles one at a time) and `maxAttempts` (failed attempts before a message is dead,
 * the inbox's `maxAttempts`, default 5).
 */
export type InboxHandlerOptions = InboxSource &
  Pick<HandlerOptions, 'concurrency' | 'maxAttempts'> & { readonly transaction?: InboxTransactionKind };

/** What `@InboxHandler` records on its method. */
export interface InboxHandlerMetadata {
  readonly inbox: string;
  readonly options: InboxHandlerOptions;
}
