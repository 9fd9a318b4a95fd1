import type { ChannelModel, ConfirmChannel, Message, Options } from 'amqplib';
import { InvalidOption, PublishFailed } from '../contract/errors.js';
import type { DeliveryReceipt } from '../contract/types.js';
import { loadPeer } from '../internal/load-peer.js';
import { awaitConfirm, encodeBody } from './confirm.js';
import { connectWithRetry, OutageLog } from './reconnect.js';
import type { OutboxMessage, Publisher, PublisherContext, PublisherHealth } from './publisher.js';
import { compileDestination, type Destination } from './subject.js';

/** Options of {@link RabbitMqPublisher}. */
export interface RabbitMqPublisherOptions {
  /** AMQP URL (default `amqp://guest:guest@127.0.0.1:5672`). */
  readonly url?: string | Options.Connect;
  /** The exchange to publish to (`''`: the default exchange, routing keys are queue names). Checked to exist at connect. */
  readonly exchange: string;
  /** Routing key: a template (`orders.{type}`, same fields as the JetStream subject) or a function of the message. */
  readonly routingKey: Destination;
  /** Largest body published; above it the message is dead at once (default 16 MiB, RabbitMQ 4's `max_message_size`). */
  readonly maxMessageBytes?: number;
  /** Pause between connection attempts (default 1000 ms). */
  readonly reconnectWaitMs?: number;
}

type Amqp = typeof import('amqplib');

interface Pending {
  returned: boolean;
}

/**
 * Publishes outbox messages to RabbitMQ over a confirm channel (`amqplib`,
 * an optional peer loaded on `connect`).
 *
 * - Every message is `persistent` (delivery mode 2) and `mandatory`: a message
 *   no queue is bound for comes back (`basic.return`) and the publish fails
 *   (retried), it is never a silent ack.
 * - `messageId` is the message id (`OutboxMessage.id`, unique across
 *   stores: consumers dedupe on it with an inbox; RabbitMQ itself has no
 *   dedup window); `type`, `contentType`,
 *   `correlationId` and every header travel as AMQP properties and headers.
 * - Success only on the broker's confirm (`basic.ack`); a `basic.nack` or a
 *   channel closed before the confirm fails the publish. The receipt is
 *   `{ broker, exchange, routingKey, deliveryTag, channel, confirmed }`.
 * - The connection and channel are re-opened after any loss; publishes wait
 *   for it within their timeout.
 */
export class RabbitMqPublisher implements Publisher {
  readonly broker = 'rabbitmq';
  private readonly routingKeyOf: (m: OutboxMessage) => string;
  private readonly maxBytes: number;
  private amqp: Amqp | null = null;
  private conn: ChannelModel | null = null;
  private ch: ConfirmChannel | null = null;
  private ctx: PublisherContext | null = null;
  private outage: OutageLog | null = null;
  private closed = false;
  private generation = 0;
  private deliveryTag = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly waiters = new Set<() => void>();
  private reconnecting: Promise<void> | null = null;
  private readonly stop = new AbortController();

  /** @throws InvalidOption naming the field (an unknown routing-key template field included), before any I/O */
  constructor(private readonly options: RabbitMqPublisherOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidOption('options', 'must be an object { exchange, routingKey, url? }');
    if (typeof options.exchange !== 'string')
      throw new InvalidOption('exchange', "must be a string ('' for the default exchange)");
    this.routingKeyOf = compileDestination('routingKey', options.routingKey);
    this.maxBytes = options.maxMessageBytes ?? 16 * 1024 * 1024;
    if (!Number.isInteger(this.maxBytes) || this.maxBytes < 1)
      throw new InvalidOption('maxMessageBytes', 'must be an integer ≥ 1');
    if (
      options.reconnectWaitMs !== undefined &&
      (!Number.isInteger(options.reconnectWaitMs) || options.reconnectWaitMs < 1)
    )
      throw new InvalidOption('reconnectWaitMs', 'must be an integer ≥ 1');
  }

  async connect(ctx: PublisherContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    this.amqp ??= await loadPeer('amqplib', () => import('amqplib'), 'for the RabbitMQ publisher');
    this.outage = new OutageLog(
      (m) => ctx.logger.warn(m),
      `RabbitMQ (${this.describeUrl()}) for outbox ${JSON.stringify(ctx.outbox)}`,
    );
    await this.openLoop(signal, true);
  }

  async publish(message: OutboxMessage, signal: AbortSignal): Promise<DeliveryReceipt> {
    const ctx = this.ctx;
    if (!ctx) throw new PublishFailed('the RabbitMQ publisher is not connected');
    const body = encodeBody(message.payload, this.maxBytes, 'RabbitMQ', 'maxMessageBytes');
    const routingKey = this.routingKeyOf(message);
    const ch = await this.channel(signal);
    const generation = this.generation;
    const tag = ++this.deliveryTag;
    const messageId = message.id;
    const entry: Pending = { returned: false };
    // Keyed by channel generation and id: a republish on a new channel is its own entry.
    const key = `${generation}:${messageId}`;
    this.pending.set(key, entry);
    const e = message.envelope;
    const props: Options.Publish = {
      persistent: true,
      mandatory: true,
      messageId,
      contentType: e.contentType,
      headers: { ...message.headers },
      ...(e.type !== null ? { type: e.type } : {}),
      ...(e.correlationId !== null ? { correlationId: e.correlationId } : {}),
    };
    const confirmed = new Promise<void>((resolve, reject) => {
      try {
        ch.publish(this.options.exchange, routingKey, body, props, (err: unknown) =>
          err
            ? reject(err instanceof Error ? err : new PublishFailed(`RabbitMQ nacked message ${messageId}`))
            : resolve(),
        );
      } catch (err) {
        reject(err instanceof Error ? err : new PublishFailed(String(err)));
      }
    });
    try {
      await awaitConfirm(confirmed, signal, ctx.onLateConfirm);
    } finally {
      this.pending.delete(key);
    }
    // basic.return precedes the basic.ack of the same message on its channel.
    if (entry.returned)
      throw new PublishFailed(
        `unroutable: no queue is bound to exchange ${JSON.stringify(this.options.exchange)} for routing key ${JSON.stringify(routingKey)} (mandatory)`,
      );
    return {
      broker: this.broker,
      exchange: this.options.exchange,
      routingKey,
      deliveryTag: tag,
      channel: generation,
      confirmed: true,
    };
  }

  health(): PublisherHealth {
    if (this.closed) return { status: 'down' };
    if (this.ch) return { status: 'up' };
    return { status: 'degraded', ...(this.outage?.detail ? { detail: this.outage.detail } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stop.abort();
    for (const w of this.waiters) w();
    const conn = this.conn;
    this.conn = null;
    this.ch = null;
    if (conn) await conn.close().catch(() => undefined);
  }

  /** Opens a connection and confirm channel, retrying until it succeeds, `signal` aborts or the publisher closes. */
  private async openLoop(signal: AbortSignal, first: boolean): Promise<void> {
    const amqp = this.amqp!;
    let conn: ChannelModel | null = null;
    try {
      await connectWithRetry(
        async () => {
          conn = await amqp.connect(this.options.url ?? 'amqp://guest:guest@127.0.0.1:5672');
          // A loss before attach() is a failed attempt (the awaits below reject), not an unhandled 'error' event.
          conn.on('error', () => undefined);
          const ch = await conn.createConfirmChannel();
          ch.on('error', () => undefined);
          if (first && this.options.exchange !== '') await this.checkExchange(conn);
          this.attach(conn, ch);
        },
        {
          outage: this.outage!,
          waitMs: this.options.reconnectWaitMs ?? 1000,
          signal,
          stopped: () => this.closed,
          cleanup: async () => {
            await (conn as ChannelModel | null)?.close().catch(() => undefined);
            conn = null;
          },
        },
      );
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  private async checkExchange(conn: ChannelModel): Promise<void> {
    // A failed check closes its channel (404), so it runs on a channel of its own.
    const probe = await conn.createChannel();
    probe.on('error', () => undefined);
    try {
      await probe.checkExchange(this.options.exchange);
      await probe.close();
    } catch (err) {
      if (/NOT_FOUND|404/.test(String((err as Error).message))) {
        throw new InvalidOption(
          'exchange',
          `names ${JSON.stringify(this.options.exchange)}, which does not exist on the broker; declare it (durable) first`,
        );
      }
      throw err;
    }
  }

  private attach(conn: ChannelModel, ch: ConfirmChannel): void {
    this.generation += 1;
    this.deliveryTag = 0;
    const generation = this.generation;
    this.conn = conn;
    this.ch = ch;
    this.outage!.recovered();
    ch.on('return', (msg: Message) => {
      const id = msg.properties.messageId as string | undefined;
      const p = id === undefined ? undefined : this.pending.get(`${generation}:${id}`);
      if (p) p.returned = true;
    });
    const lost = (err?: unknown): void => {
      if (this.generation !== generation || this.closed) return;
      this.ch = null;
      this.conn = null;
      this.outage!.failed(err ?? new PublishFailed('connection closed'));
      conn.close().catch(() => undefined);
      this.reconnect();
    };
    ch.on('error', lost);
    ch.on('close', () => lost(new PublishFailed('channel closed')));
    conn.on('error', lost);
    conn.on('close', () => lost(new PublishFailed('connection closed')));
    for (const w of this.waiters) w();
  }

  private reconnect(): void {
    this.reconnecting ??= this.openLoop(this.stop.signal, false).finally(() => (this.reconnecting = null));
  }

  /** The open channel, waiting (within the publish's signal) for a reconnect. */
  private async channel(signal: AbortSignal): Promise<ConfirmChannel> {
    while (!this.ch) {
      if (this.closed) throw new PublishFailed('the RabbitMQ publisher is closed');
      if (signal.aborted)
        throw signal.reason instanceof Error
          ? signal.reason
          : new PublishFailed('publish aborted while RabbitMQ was reconnecting');
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.waiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        this.waiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
    return this.ch;
  }

  private describeUrl(): string {
    const u = this.options.url ?? 'amqp://127.0.0.1:5672';
    if (typeof u !== 'string') return `${u.hostname ?? '127.0.0.1'}:${u.port ?? 5672}`;
    return u.replace(/\/\/[^@/]*@/, '//');
  }
}
