import type { Channel, ChannelModel, ConsumeMessage, Options } from 'amqplib';
import { InvalidOption } from '../contract/errors.js';
import { readEnvelope } from '../contract/envelope.js';
import { loadPeer } from '../internal/load-peer.js';
import { pauseUnlessAborted } from '../publishers/reconnect.js';
import { decodeBody, InboxRunner, type InboxConsumerBase } from './inbox-message.js';

/** Longest a stop waits for the messages being handled to finish and ack (ms). */
const STOP_DRAIN_MS = 10_000;

/** Options of {@link RabbitMqInboxConsumer}. */
export interface RabbitMqInboxConsumerOptions<T = unknown> extends InboxConsumerBase<T> {
  /** AMQP URL (default `amqp://guest:guest@127.0.0.1:5672`). */
  readonly url?: string | Options.Connect;
  /** The queue to consume (declare it, with `x-dead-letter-exchange` for dead messages). */
  readonly queue: string;
  /** Unacked messages in flight (default 16). */
  readonly prefetch?: number;
  /** Pause between connection attempts (default 1000 ms). */
  readonly reconnectWaitMs?: number;
}

/**
 * A RabbitMQ consumer whose effects are effectively-once: each message is
 * claimed in the inbox (key: its `messageId` property, the outbox id) inside
 * the effect's transaction, acked only after that transaction committed,
 * rejected without requeue (to the queue's dead-letter exchange) once the
 * inbox gave up on it, and requeued otherwise. Reconnects after any loss;
 * the broker redelivers what was unacked, and the inbox absorbs it.
 * A message without a `messageId` is rejected to the dead-letter exchange.
 */
export class RabbitMqInboxConsumer<T = unknown> {
  private readonly runner: InboxRunner<T>;
  private readonly prefetch: number;

  /** @throws InvalidOption naming the field, before any I/O */
  constructor(private readonly options: RabbitMqInboxConsumerOptions<T>) {
    this.runner = new InboxRunner(options);
    if (typeof options.queue !== 'string' || options.queue.length === 0)
      throw new InvalidOption('queue', 'must be a non-empty string');
    this.prefetch = options.prefetch ?? 16;
    if (!Number.isInteger(this.prefetch) || this.prefetch < 1 || this.prefetch > 65_535)
      throw new InvalidOption('prefetch', 'must be an integer in [1, 65535]');
  }

  /** Consumes until `signal` aborts, reconnecting after connection or channel loss. */
  async run(signal: AbortSignal): Promise<void> {
    const amqp = await loadPeer('amqplib', () => import('amqplib'), 'for the RabbitMQ inbox consumer');
    while (!signal.aborted) {
      let conn: ChannelModel | null = null;
      // One listener on the caller's signal per connection, removed with it: the signal outlives every reconnect.
      let onAbort: (() => void) | null = null;
      try {
        conn = await amqp.connect(this.options.url ?? 'amqp://guest:guest@127.0.0.1:5672');
        conn.on('error', () => undefined);
        const ch = await conn.createChannel();
        ch.on('error', () => undefined);
        await ch.prefetch(this.prefetch);
        const lost = new Promise<void>((resolve) => {
          conn!.on('close', () => resolve());
          conn!.on('error', () => resolve());
          ch.on('close', () => resolve());
          ch.on('error', () => resolve());
          onAbort = () => resolve();
          signal.addEventListener('abort', onAbort, { once: true });
        });
        // Messages being handled: a stop lets them finish and ack before the connection closes.
        const handling = new Set<Promise<void>>();
        const { consumerTag } = await ch.consume(
          this.options.queue,
          (m) => {
            if (!m) return;
            const p: Promise<void> = this.handle(ch, m).finally(() => handling.delete(p));
            handling.add(p);
          },
          { noAck: false },
        );
        await lost;
        if (signal.aborted && handling.size > 0) {
          await ch.cancel(consumerTag).catch(() => undefined);
          let timer: NodeJS.Timeout | undefined;
          const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, STOP_DRAIN_MS)));
          await Promise.race([Promise.allSettled([...handling]), bound]);
          clearTimeout(timer);
        }
      } catch (err) {
        if (signal.aborted) break;
        this.runner.logger.warn(
          `RabbitMQ inbox consumer of ${JSON.stringify(this.options.queue)}: ${String((err as Error).message ?? err)}; reconnecting`,
        );
      } finally {
        if (onAbort) signal.removeEventListener('abort', onAbort);
        await conn?.close().catch(() => undefined);
      }
      if (!signal.aborted) await pauseUnlessAborted(this.options.reconnectWaitMs ?? 1000, signal);
    }
  }

  private async handle(ch: Channel, m: ConsumeMessage): Promise<void> {
    const messageId = m.properties.messageId as string | undefined;
    try {
      if (messageId === undefined || messageId === '') {
        this.runner.logger.warn(
          `RabbitMQ inbox consumer of ${JSON.stringify(this.options.queue)}: a message without messageId was rejected (dead-lettered)`,
        );
        ch.nack(m, false, false);
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries((m.properties.headers ?? {}) as Record<string, unknown>))
        if (typeof v === 'string') headers[k] = v;
      const r = await this.runner.process({
        messageId,
        payload: decodeBody(m.content) as T,
        envelope: readEnvelope(messageId, headers),
        destination: m.fields.routingKey,
        deliveryCount: m.fields.redelivered ? 2 : 1,
      });
      if (r.outcome === 'ack') ch.ack(m);
      else ch.nack(m, false, r.outcome === 'retry');
    } catch {
      // The channel is gone: the broker redelivers the message, and the inbox absorbs what already committed.
    }
  }
}
