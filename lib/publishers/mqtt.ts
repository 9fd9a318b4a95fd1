import type { IClientOptions, MqttClient } from 'mqtt';
import { InvalidOption, PublishFailed } from '../contract/errors.js';
import type { DeliveryReceipt } from '../contract/types.js';
import { loadPeer } from '../internal/load-peer.js';
import { awaitConfirm, encodeBody } from './confirm.js';
import { connectWithRetry, OutageLog } from './reconnect.js';
import type { OutboxMessage, Publisher, PublisherContext, PublisherHealth } from './publisher.js';
import { compileDestination, type Destination } from './subject.js';

/** User property carrying the outbox message id, unique across stores (MQTT has no message id of its own across sessions). */
export const MQTT_MESSAGE_ID_PROPERTY = 'message-id';

/** Options of {@link MqttPublisher}. */
export interface MqttPublisherOptions {
  /** Broker URL (default `mqtt://127.0.0.1:1883`). */
  readonly url?: string;
  /** Topic: a template (`orders/{type}/{key}`) or a function of the message. */
  readonly topic: Destination;
  /** 1 (success on PUBACK, the default) or 2 (success on PUBCOMP). QoS 0 has no acknowledgment and is refused. */
  readonly qos?: 1 | 2;
  /** More `mqtt` client options (credentials, client id, TLS). MQTT 5 is always used. */
  readonly clientOptions?: Partial<IClientOptions>;
  /** Largest body published (default: the broker's CONNACK `maximumPacketSize`, else 256 MiB, MQTT's own limit). */
  readonly maxMessageBytes?: number;
  /** Pause between connection attempts at startup (default 1000 ms). */
  readonly reconnectWaitMs?: number;
}

/**
 * Publishes outbox messages over MQTT 5 (`mqtt` 5, an optional peer loaded on
 * `connect`) at QoS 1 or 2 only: success on the broker's PUBACK (QoS 1) or
 * PUBCOMP (QoS 2); a reason code ≥ 0x80 fails the publish. The message id
 * (`OutboxMessage.id`) travels as the user property `message-id`, the envelope's headers as user
 * properties, the content type and correlation id as MQTT 5 properties.
 * MQTT brokers have no dedup: consumers dedupe with an inbox. The receipt is
 * `{ broker, topic, qos, packetId }`. A PUBACK means the broker accepted the
 * message; whether it is durable depends on the broker's persistence (a
 * Mosquitto without `persistence true` keeps it in memory only).
 */
export class MqttPublisher implements Publisher {
  readonly broker = 'mqtt';
  private readonly topicOf: (m: OutboxMessage) => string;
  private readonly qos: 1 | 2;
  private client: MqttClient | null = null;
  private ctx: PublisherContext | null = null;
  private outage: OutageLog | null = null;
  private closed = false;
  private maxBytes = 256 * 1024 * 1024;

  /** @throws InvalidOption naming the field (QoS 0, an unknown topic template field), before any I/O */
  constructor(private readonly options: MqttPublisherOptions) {
    if (options === null || typeof options !== 'object')
      throw new InvalidOption('options', 'must be an object { topic, url?, qos? }');
    this.topicOf = compileDestination('topic', options.topic);
    const qos = options.qos ?? 1;
    if (qos !== 1 && qos !== 2)
      throw new InvalidOption(
        'qos',
        `must be 1 (PUBACK) or 2 (PUBCOMP); QoS 0 has no broker acknowledgment, got ${JSON.stringify(qos)}`,
      );
    this.qos = qos;
    if (
      options.maxMessageBytes !== undefined &&
      (!Number.isInteger(options.maxMessageBytes) || options.maxMessageBytes < 1)
    )
      throw new InvalidOption('maxMessageBytes', 'must be an integer ≥ 1');
  }

  async connect(ctx: PublisherContext, signal: AbortSignal): Promise<void> {
    this.ctx = ctx;
    const mqtt = await loadPeer('mqtt', () => import('mqtt'), 'for the MQTT publisher');
    this.outage = new OutageLog(
      (m) => ctx.logger.warn(m),
      `MQTT (${this.options.url ?? 'mqtt://127.0.0.1:1883'}) for outbox ${JSON.stringify(ctx.outbox)}`,
    );
    await connectWithRetry(
      async () => {
        const client = await mqtt.connectAsync(
          this.options.url ?? 'mqtt://127.0.0.1:1883',
          { protocolVersion: 5, reconnectPeriod: 1000, connectTimeout: 5000, ...this.options.clientOptions },
          false,
        );
        client.on('offline', () => this.outage?.failed(new PublishFailed('connection lost')));
        client.on('error', (err) => this.outage?.failed(err));
        client.on('connect', (connack) => {
          this.outage?.recovered();
          this.readLimit(connack.properties?.maximumPacketSize);
        });
        this.client = client;
      },
      { outage: this.outage, waitMs: this.options.reconnectWaitMs ?? 1000, signal, stopped: () => this.closed },
    );
  }

  async publish(message: OutboxMessage, signal: AbortSignal): Promise<DeliveryReceipt> {
    const { client, ctx } = this;
    if (!client || !ctx) throw new PublishFailed('the MQTT publisher is not connected');
    const body = encodeBody(
      message.payload,
      this.options.maxMessageBytes ?? this.maxBytes,
      'MQTT',
      'maximum packet size',
    );
    const topic = this.topicOf(message);
    const e = message.envelope;
    const sent = client.publishAsync(topic, body, {
      qos: this.qos,
      properties: {
        userProperties: { ...message.headers, [MQTT_MESSAGE_ID_PROPERTY]: message.id },
        contentType: e.contentType,
        ...(e.correlationId !== null ? { correlationData: Buffer.from(e.correlationId, 'utf8') } : {}),
      },
    });
    const packet = await awaitConfirm(sent, signal, ctx.onLateConfirm);
    return { broker: this.broker, topic, qos: this.qos, packetId: packet?.messageId ?? 0 };
  }

  health(): PublisherHealth {
    if (this.closed) return { status: 'down' };
    if (this.client?.connected) return { status: 'up' };
    return { status: 'degraded', ...(this.outage?.detail ? { detail: this.outage.detail } : {}) };
  }

  async close(): Promise<void> {
    this.closed = true;
    const c = this.client;
    this.client = null;
    if (c) await c.endAsync(true).catch(() => undefined);
  }

  private readLimit(max: number | undefined): void {
    if (typeof max === 'number' && max > 0) this.maxBytes = max;
  }
}
