import type { JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidOption } from '../contract/errors.js';
import { readEnvelope } from '../contract/envelope.js';
import { loadPeer } from '../internal/load-peer.js';
import { pauseUnlessAborted } from '../publishers/reconnect.js';
import { decodeBody, InboxRunner, type InboxConsumerBase } from './inbox-message.js';

/** Options of {@link JetStreamInboxConsumer}. */
export interface JetStreamInboxConsumerOptions<T = unknown> extends InboxConsumerBase<T> {
  readonly connection: NatsConnection;
  readonly stream: string;
  /** A durable pull consumer of `stream` with explicit acks (create it with your `max_deliver`, `ack_wait`). */
  readonly consumer: string;
  /** Messages per fetch (default 64). */
  readonly batch?: number;
  /** How often `working()` extends the ack wait while a handler runs (default 5000 ms; keep it below `ack_wait`). */
  readonly workingIntervalMs?: number;
  /** Redelivery delay after a failed attempt (default 1000 ms). */
  readonly retryDelayMs?: number;
}

/**
 * A JetStream pull consumer whose effects are effectively-once: each message
 * is claimed in the inbox (key: its `Nats-Msg-Id`, the outbox id) inside the
 * effect's transaction; `working()` extends the ack wait while the handler
 * runs; `ackAck()` only after the transaction committed; `term()` once the
 * inbox gave up on it (`maxAttempts`); `nak(retryDelayMs)` otherwise.
 */
export class JetStreamInboxConsumer<T = unknown> {
  private readonly runner: InboxRunner<T>;
  private readonly batch: number;
  private readonly workingMs: number;
  private readonly retryMs: number;

  /** @throws InvalidOption naming the field, before any I/O */
  constructor(private readonly options: JetStreamInboxConsumerOptions<T>) {
    this.runner = new InboxRunner(options);
    if (!options.connection || typeof options.connection.request !== 'function')
      throw new InvalidOption('connection', 'must be a NatsConnection');
    for (const f of ['stream', 'consumer'] as const) {
      if (typeof options[f] !== 'string' || options[f].length === 0)
        throw new InvalidOption(f, 'must be a non-empty string');
    }
    this.batch = intOption('batch', options.batch, 64, 10_000);
    this.workingMs = intOption('workingIntervalMs', options.workingIntervalMs, 5_000, 2_147_483_647);
    this.retryMs = intOption('retryDelayMs', options.retryDelayMs, 1_000, 2_147_483_647);
  }

  /** Fetches and handles messages until `signal` aborts; connection errors are logged and retried. */
  async run(signal: AbortSignal): Promise<void> {
    const { jetstream } = await loadPeer(
      '@nats-io/jetstream',
      () => import('@nats-io/jetstream'),
      'for the JetStream inbox consumer',
    );
    const js = jetstream(this.options.connection);
    while (!signal.aborted) {
      try {
        const consumer = await js.consumers.get(this.options.stream, this.options.consumer);
        while (!signal.aborted) {
          const msgs = await consumer.fetch({ max_messages: this.batch, expires: 1_000 });
          for await (const m of msgs) {
            await this.handle(m);
            if (signal.aborted) break;
          }
        }
      } catch (err) {
        if (signal.aborted) break;
        this.runner.logger.warn(
          `JetStream inbox consumer ${JSON.stringify(this.options.consumer)}: ${String((err as Error).message ?? err)}; retrying`,
        );
        await pauseUnlessAborted(500, signal);
      }
    }
  }

  private async handle(m: JsMsg): Promise<void> {
    const headers: Record<string, string> = {};
    for (const [k] of m.headers ?? []) headers[k.toLowerCase()] = m.headers!.get(k);
    const messageId = m.headers?.get('Nats-Msg-Id') || `${m.info.stream}:${m.seq}`;
    const working = setInterval(() => m.working(), this.workingMs);
    try {
      const r = await this.runner.process({
        messageId,
        payload: decodeBody(m.data) as T,
        envelope: readEnvelope(messageId, headers),
        destination: m.subject,
        deliveryCount: m.info.deliveryCount,
      });
      if (r.outcome === 'ack') await m.ackAck();
      else if (r.outcome === 'dead')
        m.term(`dead in inbox ${this.runner.inbox.name}${r.error ? `: ${r.error.slice(0, 200)}` : ''}`);
      else m.nak(this.retryMs);
    } finally {
      clearInterval(working);
    }
  }
}

function intOption(name: string, v: number | undefined, dflt: number, max: number): number {
  if (v === undefined) return dflt;
  if (!Number.isInteger(v) || v < 1 || v > max) throw new InvalidOption(name, `must be an integer in [1, ${max}]`);
  return v;
}
