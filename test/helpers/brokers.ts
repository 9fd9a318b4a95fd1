import { connect as tcpConnect } from 'node:net';
import { afterAll, beforeAll } from '@jest/globals';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Channel, ChannelModel } from 'amqplib';

/** Broker addresses of the test machine (and CI): `.ci/run` checks each is up. */
export const NATS_URL = process.env.ALKSTORE_NATS_URL ?? '127.0.0.1:4222';
export const AMQP_URL = process.env.ALKSTORE_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const MQTT_URL = process.env.ALKSTORE_MQTT_URL ?? 'mqtt://127.0.0.1:1883';
export const REDIS_URL = process.env.ALKSTORE_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Rejects with a message naming the broker when nothing listens at host:port. */
export async function requireBroker(name: string, hostPort: string): Promise<void> {
  const [host, port] = hostPort.replace(/^[a-z]+:\/\/([^@]*@)?/, '').split(':') as [string, string];
  await new Promise<void>((resolve, reject) => {
    const s = tcpConnect({ host, port: Number(port.replace(/\/.*$/, '')) }, () => {
      s.end();
      resolve();
    });
    s.on('error', (err) =>
      reject(
        new Error(
          `${name} is not reachable at ${hostPort} (${err.message}); these tests need the real broker (see .ci/run)`,
        ),
      ),
    );
  });
}

/** A NATS connection for test set-up (streams, consumers, reads). */
export async function natsAdmin(): Promise<NatsConnection> {
  await requireBroker('NATS', NATS_URL);
  const { connect } = await import('@nats-io/transport-node');
  return connect({ servers: NATS_URL });
}

/** Creates a stream on `<prefix>.>` with the given duplicate window (ms). */
export async function createStream(
  nc: NatsConnection,
  name: string,
  subjectPrefix: string,
  duplicateWindowMs = 120_000,
): Promise<void> {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name, subjects: [`${subjectPrefix}.>`], duplicate_window: duplicateWindowMs * 1_000_000 });
}

export async function deleteStream(nc: NatsConnection, name: string): Promise<void> {
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(nc);
  await jsm.streams.delete(name).catch(() => undefined);
}

/** A name safe for NATS subjects, stream names and RabbitMQ queues. */
export function brokerName(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 7)}`;
}

/** A durable topic exchange with one durable queue bound on `binding`; `cleanup` gets their deletion. */
export async function topicQueue(
  ch: import('amqplib').Channel,
  prefix: string,
  binding: string,
  cleanup: (() => Promise<unknown>)[],
): Promise<{ exchange: string; queue: string }> {
  const exchange = brokerName(`${prefix}.ex`);
  const queue = brokerName(`${prefix}.q`);
  await ch.assertExchange(exchange, 'topic', { durable: true });
  await ch.assertQueue(queue, { durable: true });
  await ch.bindQueue(queue, exchange, binding);
  cleanup.push(
    () => ch.deleteQueue(queue),
    () => ch.deleteExchange(exchange),
  );
  return { exchange, queue };
}

/** Admin connections to JetStream and RabbitMQ for one describe block, see {@link withBrokerAdmins}. */
export interface BrokerAdmins {
  readonly nc: NatsConnection;
  readonly ch: Channel;
  /** Run after the block (streams and queues it made), failures ignored. */
  readonly cleanups: (() => Promise<unknown>)[];
}

/**
 * Opens a NATS admin connection and a RabbitMQ channel before the enclosing block's tests (failing
 * with the broker's name when RabbitMQ is down) and closes them after the block's cleanups ran.
 */
export function withBrokerAdmins(): BrokerAdmins {
  let nc: NatsConnection | undefined;
  let conn: ChannelModel | undefined;
  let ch: Channel | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    nc = await natsAdmin();
    await requireBroker('RabbitMQ', AMQP_URL.replace(/^amqp:\/\/[^@]*@/, ''));
    const amqp = await import('amqplib');
    conn = await amqp.connect(AMQP_URL);
    ch = await conn.createChannel();
  });
  afterAll(async () => {
    for (const c of cleanups) await c().catch(() => undefined);
    await nc?.close();
    await conn?.close();
  });
  return {
    get nc() {
      return nc!;
    },
    get ch() {
      return ch!;
    },
    cleanups,
  };
}
