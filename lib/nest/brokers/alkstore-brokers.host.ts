import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModuleRef } from '@nestjs/core';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidOption } from '../../contract/errors.js';
import { validateName } from '../../contract/names.js';
import type { StoreLogger, TxOps } from '../../contract/types.js';
import { JetStreamInboxConsumer } from '../../inbox/jetstream-consumer.js';
import type { InboxMessage } from '../../inbox/inbox-message.js';
import { RabbitMqInboxConsumer } from '../../inbox/rabbitmq-consumer.js';
import { loadPeer } from '../../internal/load-peer.js';
import { OutboxDispatcher, OutboxSettings } from '../../outbox/index.js';
import type { PublisherHealth } from '../../publishers/publisher.js';
import { ALKSTORE_MODULE_OPTIONS, OUTBOX_HANDLER_METADATA } from '../alkstore.constants.js';
import { InvalidHandler } from '../errors/invalid-handler.error.js';
import type { AlkstoreModuleOptions } from '../interfaces/alkstore-options.interface.js';
import type { OutboxHandlerMetadata } from '../interfaces/handler-options.interface.js';
import { Store } from '../store.token.js';
import { readMethodMetadata } from '../utils/append-metadata.js';
import { instanceMethods } from '../utils/discovered-methods.js';
import { nestStoreLogger } from '../utils/nest-logger.js';
import { defaultWorkerId } from '../utils/worker-id.js';
import { supervise } from '../workers/supervise.js';
import { ALKSTORE_BROKERS_OPTIONS, INBOX_HANDLER_METADATA } from './brokers.constants.js';
import type {
  AlkstoreBrokersOptions,
  InboxHandlerMetadata,
  OutboxPublisherRegistration,
} from './brokers-options.interface.js';
import { checkTransactionKind, inboxTransaction } from './inbox-transaction.js';
import type { InboxOpts } from '../../contract/inbox.js';
import { checkHandlerOptions, type HandlerOptionsShape } from '../utils/handler-options.js';

/** What `@InboxHandler` takes beside its source. */
const INBOX_HANDLER_SHAPE: HandlerOptionsShape = {
  shared: ['concurrency', 'maxAttempts'],
  own: ['jetstream', 'rabbitmq', 'transaction'],
  elsewhere: {
    leaseMs: "the broker holds the message (JetStream's ack_wait, RabbitMQ's consumer timeout)",
    backoffBaseMs: 'JetStream redelivers after jetstream.retryDelayMs; RabbitMQ requeues at once',
    idlePollIntervalMs: 'the broker pushes messages; nothing polls',
    metrics: 'inbox consumers report no job metrics',
  },
};

/** Refuses a key of a source object the consumer does not take (a renamed one names its new place). */
function checkSourceKeys(
  source: string,
  given: unknown,
  known: readonly string[],
  renamed: Readonly<Record<string, string>>,
): void {
  if (given === null || typeof given !== 'object') throw new InvalidOption(source, 'must be an object');
  for (const key of Object.keys(given)) {
    if (known.includes(key) || (given as Record<string, unknown>)[key] === undefined) continue;
    const to = renamed[key];
    throw new InvalidOption(
      `${source}.${key.slice(0, 64)}`,
      to === undefined
        ? `is not an option of the ${source} source (${known.join(', ')})`
        : `is now ${to} (docs/vocabulary.md)`,
    );
  }
}

/** The inbox's options with the handler's `maxAttempts` (checked against the module's at startup). */
function inboxOptsOf(opts: InboxOpts | undefined, maxAttempts: number | undefined): InboxOpts | undefined {
  return maxAttempts === undefined ? opts : { ...opts, maxAttempts };
}

/** A discovered `@InboxHandler` method. */
interface DiscoveredInboxHandler {
  readonly label: string;
  readonly meta: InboxHandlerMetadata;
  readonly call: (tx: TxOps, message: InboxMessage, handle?: unknown) => Promise<void>;
}

/** Checks the module's options before any I/O (a typed error naming the field). */
export function validateBrokersOptions(o: unknown): AlkstoreBrokersOptions {
  if (o === null || typeof o !== 'object')
    throw new InvalidOption(
      'AlkstoreBrokersModule options',
      'must be an object { publishers?, nats?, rabbitmq?, inboxes? }',
    );
  const options = o as AlkstoreBrokersOptions;
  if (options.publishers !== undefined && !Array.isArray(options.publishers))
    throw new InvalidOption('publishers', 'must be an array of { outbox, publisher: () => Publisher, settings? }');
  const seen = new Set<string>();
  for (const [i, p] of (options.publishers ?? []).entries()) {
    const at = `publishers[${i}]`;
    if (p === null || typeof p !== 'object')
      throw new InvalidOption(at, 'must be an object { outbox, publisher: () => Publisher, settings? }');
    validateName('outbox', p.outbox);
    if (typeof p.publisher !== 'function')
      throw new InvalidOption(
        `${at}.publisher`,
        'must be a function that builds the publisher (() => new NatsJetStreamPublisher({ … })), so a restarted dispatcher gets a fresh connection',
      );
    if (seen.has(p.outbox))
      throw new InvalidOption(
        `${at}.outbox`,
        `names outbox ${JSON.stringify(p.outbox)} a second time; one publisher per outbox`,
      );
    seen.add(p.outbox);
  }
  if (
    options.nats !== undefined &&
    (options.nats === null ||
      typeof options.nats !== 'object' ||
      !('connection' in options.nats || 'servers' in options.nats))
  ) {
    throw new InvalidOption(
      'nats',
      'must be { connection } (a NatsConnection you own) or { servers, connectOptions? }',
    );
  }
  return options;
}

/**
 * Runs what `AlkstoreBrokersModule` configures: one `OutboxDispatcher` per
 * registered publisher and one inbox consumer per `@InboxHandler` method.
 * Discovers and validates in `onModuleInit`, starts at bootstrap (not with
 * `workers: false` or `'manual'`), drains in `beforeApplicationShutdown`
 * (before the store closes). `publisherHealth()` is what `nestjs-alkstore/nest`
 * reports.
 */
@Injectable()
export class AlkstoreBrokersHost implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger: StoreLogger;
  private readonly abort = new AbortController();
  private readonly loops: Promise<void>[] = [];
  private readonly dispatchers = new Map<string, { current: OutboxDispatcher | null; failed: string | null }>();
  private handlers: DiscoveredInboxHandler[] = [];
  private nats: Promise<NatsConnection> | null = null;
  private ownsNats = false;
  private stopped: Promise<void> | null = null;

  constructor(
    @Inject(ALKSTORE_BROKERS_OPTIONS) private readonly options: AlkstoreBrokersOptions,
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly moduleOptions: AlkstoreModuleOptions,
    private readonly store: Store,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly moduleRef: ModuleRef,
  ) {
    this.logger = moduleOptions.logger ?? nestStoreLogger();
    validateBrokersOptions(options);
  }

  async onModuleInit(): Promise<void> {
    try {
      this.explore();
    } catch (err) {
      // Startup fails here, before anything could close the store: do not leak its connections.
      await this.store.close().catch(() => undefined);
      throw err;
    }
  }

  private explore(): void {
    const seen = new Map<string, string>();
    const published = new Set((this.options.publishers ?? []).map((p) => p.outbox));
    for (const { wrapper, instance, label, method } of instanceMethods(this.discovery, this.scanner)) {
      for (const h of readMethodMetadata<OutboxHandlerMetadata>(OUTBOX_HANDLER_METADATA, method)) {
        // Two dispatchers (the handler's and the publisher's) would race for the same messages.
        if (published.has(h.outbox))
          throw new InvalidOption(
            `publishers (outbox ${JSON.stringify(h.outbox)})`,
            `is also delivered by @OutboxHandler ${label}; give an outbox a publisher or a handler, not both`,
          );
      }
      const metas = readMethodMetadata<InboxHandlerMetadata>(INBOX_HANDLER_METADATA, method);
      if (metas.length === 0) continue;
      if (!wrapper.isDependencyTreeStatic()) {
        this.logger.warn(
          `${label} is skipped: @InboxHandler methods cannot live on request-scoped (or transient-dependent) providers`,
        );
        continue;
      }
      const fn = method as (tx: TxOps, message: InboxMessage, handle?: unknown) => Promise<void>;
      for (const meta of metas) {
        const source = this.check(label, meta);
        const previous = seen.get(source);
        if (previous !== undefined)
          throw new InvalidHandler(
            `${source} has two @InboxHandler methods: ${previous} and ${label}; one consumer per source`,
          );
        seen.set(source, label);
        this.handlers.push({ label, meta, call: (tx, message, handle) => fn.call(instance, tx, message, handle) });
      }
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    const workers = this.moduleOptions.workers;
    if (workers === 'off' || workers === 'manual') return;
    for (const p of this.options.publishers ?? []) this.startDispatcher(p);
    for (const h of this.handlers) this.startConsumer(h);
  }

  /** Stops every dispatcher and consumer and waits for them (in-flight work drains). */
  beforeApplicationShutdown(): Promise<void> {
    this.stopped ??= (async () => {
      this.abort.abort();
      await Promise.allSettled(this.loops);
      if (this.ownsNats && this.nats) await (await this.nats.catch(() => null))?.close().catch(() => undefined);
    })();
    return this.stopped;
  }

  /**
   * The health of each publisher-backed outbox (see `OutboxDispatcher.health`): `degraded` while its
   * broker is unreachable or its publishes keep failing, `down` after its dispatcher stopped with an
   * error (a configuration the broker refused, such as a short dedup window) until it restarts.
   */
  publisherHealth(): Record<string, PublisherHealth> {
    const out: Record<string, PublisherHealth> = {};
    for (const [outbox, d] of this.dispatchers) {
      if (d.failed !== null) out[outbox] = { status: 'down', detail: d.failed };
      else out[outbox] = d.current ? d.current.health() : { status: 'degraded', detail: 'not started' };
    }
    return out;
  }

  private check(label: string, meta: InboxHandlerMetadata): string {
    try {
      validateName('inbox', meta.inbox);
      const o = meta.options as Partial<InboxHandlerMetadata['options']> | null;
      if (o === null || typeof o !== 'object')
        throw new InvalidOption('options', 'must be { jetstream: { stream, consumer } } or { rabbitmq: { queue } }');
      checkHandlerOptions('@InboxHandler', o, INBOX_HANDLER_SHAPE);
      checkTransactionKind('@InboxHandler', o.transaction);
      const inboxOpts = this.options.inboxes?.[meta.inbox];
      if (
        o.maxAttempts !== undefined &&
        inboxOpts?.maxAttempts !== undefined &&
        inboxOpts.maxAttempts !== o.maxAttempts
      )
        throw new InvalidOption(
          'maxAttempts',
          `is ${o.maxAttempts} here and ${inboxOpts.maxAttempts} in AlkstoreBrokersModule's inboxes.${meta.inbox}; set it once`,
        );
      if ((o.jetstream === undefined) === (o.rabbitmq === undefined))
        throw new InvalidOption(
          'options',
          'must name exactly one source: { jetstream: { stream, consumer } } or { rabbitmq: { queue } }',
        );
      if (o.jetstream) {
        checkSourceKeys(
          'jetstream',
          o.jetstream,
          ['stream', 'consumer', 'claimSize', 'workingIntervalMs', 'retryDelayMs'],
          {
            batch: 'jetstream.claimSize',
          },
        );
        if (o.concurrency !== undefined && o.concurrency !== 1)
          throw new InvalidOption(
            'concurrency',
            'is for RabbitMQ sources: a JetStream consumer handles one message at a time (run more consumers to scale)',
          );
        if (!this.options.nats)
          throw new InvalidOption(
            'nats',
            'is not set in AlkstoreBrokersModule.forRoot, and a JetStream @InboxHandler needs it: nats: { servers } or { connection }',
          );
        return `JetStream consumer ${JSON.stringify(o.jetstream.consumer)} of stream ${JSON.stringify(o.jetstream.stream)}`;
      }
      checkSourceKeys('rabbitmq', o.rabbitmq, ['queue'], { prefetch: 'concurrency (beside rabbitmq)' });
      if (o.concurrency !== undefined && o.concurrency > 65_535)
        throw new InvalidOption('concurrency', 'must be at most 65535 (the RabbitMQ prefetch it sets)');
      return `RabbitMQ queue ${JSON.stringify(o.rabbitmq!.queue)}`;
    } catch (err) {
      throw new InvalidHandler(`${label}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  private startDispatcher(p: OutboxPublisherRegistration): void {
    const settings =
      p.settings instanceof OutboxSettings
        ? p.settings
        : {
            drainTimeoutMs: this.moduleOptions.drainTimeoutMs ?? 10_000,
            ...(this.moduleOptions.idlePollIntervalMs === undefined
              ? {}
              : { idlePollIntervalMs: this.moduleOptions.idlePollIntervalMs }),
            ...p.settings,
          };
    const workerId = this.moduleOptions.workerId ?? defaultWorkerId();
    const create = (): OutboxDispatcher =>
      new OutboxDispatcher({
        store: this.store,
        outbox: p.outbox,
        publisher: p.publisher(),
        settings,
        logger: this.logger,
        workerId,
        ...(p.receipts === undefined ? {} : { receipts: p.receipts }),
        ...(p.restartAllowanceMs === undefined ? {} : { restartAllowanceMs: p.restartAllowanceMs }),
        ...(p.metrics === undefined ? {} : { metrics: p.metrics }),
      });
    // Built now, so invalid settings fail startup.
    const state = { current: create() as OutboxDispatcher | null, failed: null as string | null };
    this.dispatchers.set(p.outbox, state);
    let first: OutboxDispatcher | null = state.current;
    const run = async (signal: AbortSignal): Promise<void> => {
      const d = first ?? create();
      first = null;
      state.current = d;
      state.failed = null;
      try {
        await d.run(signal);
      } catch (err) {
        state.failed = err instanceof Error ? err.message : String(err);
        throw err;
      }
    };
    this.loops.push(supervise(`publisher of outbox ${JSON.stringify(p.outbox)}`, run, this.abort.signal, this.logger));
  }

  private startConsumer(h: DiscoveredInboxHandler): void {
    const o = h.meta.options;
    const base = {
      store: this.store,
      inbox: this.store.inbox(h.meta.inbox, inboxOptsOf(this.options.inboxes?.[h.meta.inbox], o.maxAttempts)),
      handler: h.call,
      transaction: inboxTransaction(o.transaction ?? 'store', this.moduleRef),
      logger: this.logger,
    };
    const name = `@InboxHandler ${h.label}`;
    if (o.jetstream) {
      const js = o.jetstream;
      const run = async (signal: AbortSignal): Promise<void> => {
        const connection = await this.natsConnection();
        await new JetStreamInboxConsumer({
          ...base,
          connection,
          stream: js.stream,
          consumer: js.consumer,
          batch: js.claimSize,
          workingIntervalMs: js.workingIntervalMs,
          retryDelayMs: js.retryDelayMs,
        }).run(signal);
      };
      this.loops.push(supervise(name, run, this.abort.signal, this.logger));
      return;
    }
    const rmq = o.rabbitmq!;
    const consumer = new RabbitMqInboxConsumer({
      ...base,
      queue: rmq.queue,
      prefetch: o.concurrency,
      url: this.options.rabbitmq?.url,
      reconnectWaitMs: this.options.rabbitmq?.reconnectWaitMs,
    });
    this.loops.push(supervise(name, (signal) => consumer.run(signal), this.abort.signal, this.logger));
  }

  /** The module's NATS connection: the one given, or one opened at the first need (retried on the next if it failed). */
  private natsConnection(): Promise<NatsConnection> {
    const cfg = this.options.nats!;
    if ('connection' in cfg) return Promise.resolve(cfg.connection);
    this.nats ??= (async () => {
      const { connect } = await loadPeer(
        '@nats-io/transport-node',
        () => import('@nats-io/transport-node'),
        'for the JetStream @InboxHandler',
      );
      this.ownsNats = true;
      return connect({ servers: cfg.servers, maxReconnectAttempts: -1, ...cfg.connectOptions });
    })();
    const pending = this.nats;
    pending.catch(() => {
      if (this.nats === pending) this.nats = null;
    });
    return pending;
  }
}
