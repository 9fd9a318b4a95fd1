import { InvalidOption, PublishFailed } from '../contract/errors.js';
import type { DeliveryReceipt } from '../contract/types.js';
import { awaitConfirm } from './confirm.js';
import { connectWithRetry, OutageLog } from './reconnect.js';
import type { OutboxMessage, Publisher, PublisherContext, PublisherHealth } from './publisher.js';
import { compileDestination, type Destination } from './subject.js';

/** The part of a `@nestjs/microservices` `ClientProxy` this publisher uses (structural: no Nest import below `lib/nest`). */
export interface ClientProxyLike {
  connect(): Promise<unknown>;
  emit(
    pattern: unknown,
    data: unknown,
  ): {
    subscribe(observer: { next?: (v: unknown) => void; error?: (e: unknown) => void; complete?: () => void }): {
      unsubscribe(): void;
    };
  };
  close(): unknown;
}

/** What is emitted by default: the id, the payload and every header (the envelope's included). */
export interface OutboxEvent<T = unknown> {
  readonly messageId: string;
  readonly payload: T;
  readonly headers: Readonly<Record<string, string>>;
}

/** Options of {@link ClientProxyPublisher}. */
export interface ClientProxyPublisherOptions {
  /** A connected or unconnected `ClientProxy` (`ClientsModule`, `ClientProxyFactory.create(...)`); closed by `close` only with `closeClient`. */
  readonly client: ClientProxyLike;
  /** The event pattern: a template (`orders.{type}`) or a function of the message. */
  readonly pattern: Destination;
  /** The emitted data; default an {@link OutboxEvent}. */
  readonly data?: (message: OutboxMessage) => unknown;
  /** Close the client on `close` (default false: the application owns it). */
  readonly closeClient?: boolean;
  /** Pause between connection attempts at startup (default 1000 ms). */
  readonly reconnectWaitMs?: number;
}

/**
 * Publishes outbox messages through any `@nestjs/microservices` `ClientProxy`
 * with `emit`, awaited: the publish succeeds when the emit's observable
 * completes. What that means depends on the transport (docs/brokers.md):
 * TCP, Redis pub/sub and core NATS only confirm the write left the process;
 * RabbitMQ (`RmqOptions`) and Kafka confirm what the broker confirms, per
 * their client settings. Prefer a broker publisher where one exists.
 * The receipt is `{ broker: 'client-proxy', pattern }`.
 */
export class ClientProxyPublisher implements Publisher {
  readonly broker = 'client-proxy';
  private readonly patternOf: (m: OutboxMessage) => string;
  private ctx: PublisherContext | null = null;
  private connected = false;
  private closed = false;
  private outage: OutageLog | null = null;

  /** @throws InvalidOption naming the field, before any I/O */
  constructor(private readonly options: ClientProxyPublisherOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidOption('options', 'must be an object { client, pattern }');
    const c = options.client as Partial<ClientProxyLike> | null | undefined;
    if (!c || typeof c.emit !== 'function' || typeof c.connect !== 'function')
      throw new InvalidOption('client', 'must be a @nestjs/microservices ClientProxy');
    if (options.data !== undefined && typeof options.data !== 'function')
      throw new InvalidOption('data', 'must be a function of the message');
    this.patternOf = compileDestination('pattern', options.pattern);
  }

  async connect(ctx: PublisherContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.outage = new OutageLog((m) => ctx.logger.warn(m), `the ClientProxy for outbox ${JSON.stringify(ctx.outbox)}`);
    await connectWithRetry(
      async () => {
        await this.options.client.connect();
        this.connected = true;
      },
      { outage: this.outage, waitMs: this.options.reconnectWaitMs ?? 1000, signal, stopped: () => this.closed },
    );
  }

  async publish(message: OutboxMessage, signal: AbortSignal): Promise<DeliveryReceipt> {
    const ctx = this.ctx;
    if (!ctx) throw new PublishFailed('the ClientProxy publisher is not connected');
    const pattern = this.patternOf(message);
    const data = this.options.data
      ? this.options.data(message)
      : ({ messageId: message.id, payload: message.payload, headers: message.headers } satisfies OutboxEvent);
    const emitted = new Promise<void>((resolve, reject) => {
      this.options.client.emit(pattern, data).subscribe({ error: reject, complete: resolve });
    });
    await awaitConfirm(emitted, signal, ctx.onLateConfirm);
    return { broker: this.broker, pattern };
  }

  health(): PublisherHealth {
    if (this.closed) return { status: 'down' };
    return this.connected
      ? { status: 'up' }
      : { status: 'degraded', ...(this.outage?.detail ? { detail: this.outage.detail } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.options.closeClient) await this.options.client.close();
  }
}
