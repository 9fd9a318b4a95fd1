import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Channel, ChannelModel } from 'amqplib';
import type { Store, TxOps } from '../../lib/contract/types.js';
import { JetStreamInboxConsumer, RabbitMqInboxConsumer } from '../../lib/inbox/index.js';
import { contractEngines, PG_URL, waitFor, type EngineDb, type EngineFixture } from '../helpers/engines.js';
import {
  AMQP_URL,
  brokerName,
  createStream,
  deleteStream,
  natsAdmin,
  requireBroker,
  topicQueue,
} from '../helpers/brokers.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { pause } from '../contract/harness.js';

/**
 * The kill -9 proof (issue #26): producer → outbox → relay (a child process)
 * → broker → inbox consumer → a business row in the consumer's database. The
 * relay is killed with SIGKILL at least 5 times mid-stream and its broker
 * connection is cut: no message is lost and no business row is duplicated;
 * the broker-side duplicates (JetStream msgID) and the inbox-absorbed ones are reported.
 */
const CHILD = fileURLToPath(new URL('./fixtures/relay-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MESSAGES = 300;
const KILLS = 5;

interface Relay {
  proc: ChildProcess;
  ready: Promise<void>;
  dups: () => number;
}

const quiet = { log: () => undefined, warn: () => undefined, error: (m: string) => process.stderr.write(`${m}\n`) };

function spawnRelay(
  engine: EngineFixture,
  db: EngineDb,
  outbox: string,
  broker: 'jetstream' | 'rabbitmq',
  port: number,
  target: string,
  destination: string,
  tally: { dup: number; errors: string[] },
): Relay {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      CHILD,
      engine.kind,
      db.location,
      engine.kind === 'postgres' ? PG_URL : '-',
      outbox,
      broker,
      String(port),
      target,
      destination,
    ],
    {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const l = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (l.includes('"ready"')) markReady();
      if (l.includes('"dup"')) tally.dup += 1;
    }
  });
  proc.stderr!.on('data', (d: Buffer) => tally.errors.push(d.toString()));
  proc.on('exit', () => markReady());
  return { proc, ready, dups: () => tally.dup };
}

async function kill(relay: Relay): Promise<void> {
  if (relay.proc.exitCode !== null || relay.proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => relay.proc.once('exit', () => resolve()));
  relay.proc.kill('SIGKILL');
  await exited;
}

async function businessRows(store: Store, queue: string): Promise<string[]> {
  const jobs = await store.queue(queue).claimBatch(10_000, 'check', { leaseMs: 600_000 });
  return jobs.map((j) => (j.payload as { messageId: string }).messageId);
}

for (const engine of contractEngines()) {
  describe(`kill -9 of the relay, broker in the loop [${engine.name}]`, () => {
    let producerDb: EngineDb;
    let consumerDb: EngineDb;
    let producer: Store;
    let consumer: Store;
    beforeAll(async () => {
      producerDb = await engine.create();
      consumerDb = await engine.create();
      producer = await producerDb.open();
      consumer = await consumerDb.open();
    }, 60_000);
    afterAll(async () => {
      await producerDb?.destroy();
      await consumerDb?.destroy();
    }, 60_000);

    /**
     * Produces messages in small transactions (at least MESSAGES, and until the chaos is over, so every kill
     * is mid-stream) while killing the relay KILLS times and cutting its broker connection twice.
     */
    async function chaos(
      outbox: string,
      business: string,
      startRelay: () => Relay,
      proxy: TcpProxy,
    ): Promise<{ kills: number; cuts: number; produced: number }> {
      let relay = startRelay();
      let produced = 0;
      let chaosOver = false;
      const produce = (async () => {
        while (produced < MESSAGES || !chaosOver) {
          await producer.withTx(async (tx) => {
            for (let i = 0; i < 5; i++) await tx.outboxEnqueue(outbox, { n: produced + i }, { maxAttempts: 1000 });
          });
          produced += 5;
          await pause(25);
        }
      })();
      let kills = 0;
      let cuts = 0;
      const seen = async () => (await consumer.queue(business).stats()).pending;
      try {
        for (let k = 0; k < KILLS; k++) {
          await relay.ready;
          const before = await seen();
          // Mid-stream: the relay has delivered something since it started.
          await waitFor('the relay making progress', async () => (await seen()) > before, 60_000, 10);
          if (k === 1 || k === 3) {
            cuts += proxy.cut() > 0 ? 1 : 0;
            const afterCut = await seen();
            await waitFor('progress after the connection cut', async () => (await seen()) > afterCut, 60_000, 10);
          }
          await kill(relay);
          kills += 1;
          relay = startRelay();
        }
        chaosOver = true;
        await produce;
        await waitFor('every message in the consumer database', async () => (await seen()) >= produced, 90_000, 50);
        await waitFor(
          'the outbox drained',
          async () => {
            const st = await producer.outbox(outbox).queue.stats();
            return st.pending + st.processing === 0;
          },
          30_000,
          50,
        );
      } finally {
        chaosOver = true;
        await kill(relay);
        await produce.catch(() => undefined);
      }
      return { kills, cuts, produced };
    }

    /** The consumer's store, counting the inbox transactions it opens (one per delivery). */
    function counting(store: Store, counter: { deliveries: number }): Store {
      return new Proxy(store, {
        get(target, prop) {
          if (prop === 'withTx')
            return <T>(fn: (tx: TxOps) => Promise<T>): Promise<T> => {
              counter.deliveries += 1;
              return target.withTx(fn);
            };
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    }

    describe('NATS JetStream', () => {
      let nc: NatsConnection;
      const streams: string[] = [];
      beforeAll(async () => {
        nc = await natsAdmin();
      });
      afterAll(async () => {
        for (const s of streams) await deleteStream(nc, s);
        await nc?.close();
      });

      it(`loses nothing and duplicates no business row across ${KILLS} SIGKILLs and 2 connection cuts`, async () => {
        const stream = brokerName('KILL');
        streams.push(stream);
        const prefix = stream.toLowerCase();
        await createStream(nc, stream, prefix);
        const { jetstreamManager, AckPolicy } = await import('@nats-io/jetstream');
        const jsm = await jetstreamManager(nc);
        await jsm.consumers.add(stream, {
          durable_name: 'billing',
          ack_policy: AckPolicy.Explicit,
          ack_wait: 5_000_000_000,
          max_deliver: -1,
        });
        const proxy = new TcpProxy('127.0.0.1', 4222);
        const port = await proxy.start();
        const outbox = 'orders';
        const business = 'business-js';
        const tally = { dup: 0, errors: [] as string[] };
        const counter = { deliveries: 0 };
        const ac = new AbortController();
        const consumerRun = new JetStreamInboxConsumer<{ n: number }>({
          store: counting(consumer, counter),
          inbox: 'billing-js',
          connection: nc,
          stream,
          consumer: 'billing',
          logger: quiet,
          handler: async (tx, m) => void (await tx.enqueue(business, { messageId: m.messageId, n: m.payload.n })),
        }).run(ac.signal);
        let result;
        try {
          result = await chaos(
            outbox,
            business,
            () => spawnRelay(engine, producerDb, outbox, 'jetstream', port, stream, `${prefix}.orders`, tally),
            proxy,
          );
        } finally {
          ac.abort();
          await consumerRun;
          await proxy.stop();
        }
        const rows = await businessRows(consumer, business);
        const info = await jsm.streams.info(stream);
        const report = {
          ...result,
          businessRows: rows.length,
          distinct: new Set(rows).size,
          streamMessages: info.state.messages,
          brokerDuplicates: tally.dup,
          inboxDuplicates: counter.deliveries - result.produced,
        };
        process.stdout.write(`kill -9 proof [${engine.name}] JetStream: ${JSON.stringify(report)}\n`);
        expect(result.kills).toBeGreaterThanOrEqual(KILLS);
        expect(result.cuts).toBe(2);
        expect(rows.length).toBe(result.produced); // 0 lost, 0 duplicate business rows
        expect(new Set(rows).size).toBe(result.produced);
        expect(info.state.messages).toBe(result.produced); // msgID absorbed every republish inside the stream
      }, 240_000);
    });

    describe('RabbitMQ', () => {
      let conn: ChannelModel;
      let ch: Channel;
      const cleanup: (() => Promise<unknown>)[] = [];
      beforeAll(async () => {
        await requireBroker('RabbitMQ', '127.0.0.1:5672');
        const amqp = await import('amqplib');
        conn = await amqp.connect(AMQP_URL);
        ch = await conn.createChannel();
      });
      afterAll(async () => {
        for (const c of cleanup) await c().catch(() => undefined);
        await conn?.close();
      });

      it(`loses nothing and duplicates no business row across ${KILLS} SIGKILLs and 2 connection cuts`, async () => {
        const { exchange, queue } = await topicQueue(ch, 'kill', 'orders.#', cleanup);
        const proxy = new TcpProxy('127.0.0.1', 5672);
        const port = await proxy.start();
        const outbox = 'orders-rmq';
        const business = 'business-rmq';
        const tally = { dup: 0, errors: [] as string[] };
        const counter = { deliveries: 0 };
        const ac = new AbortController();
        const consumerRun = new RabbitMqInboxConsumer<{ n: number }>({
          store: counting(consumer, counter),
          inbox: 'billing-rmq',
          url: AMQP_URL,
          queue,
          logger: quiet,
          handler: async (tx, m) => void (await tx.enqueue(business, { messageId: m.messageId, n: m.payload.n })),
        }).run(ac.signal);
        let result;
        try {
          result = await chaos(
            outbox,
            business,
            () => spawnRelay(engine, producerDb, outbox, 'rabbitmq', port, exchange, 'orders.placed', tally),
            proxy,
          );
        } finally {
          ac.abort();
          await consumerRun;
          await proxy.stop();
        }
        const rows = await businessRows(consumer, business);
        const report = {
          ...result,
          businessRows: rows.length,
          distinct: new Set(rows).size,
          inboxDuplicates: counter.deliveries - result.produced,
        };
        process.stdout.write(`kill -9 proof [${engine.name}] RabbitMQ: ${JSON.stringify(report)}\n`);
        expect(result.kills).toBeGreaterThanOrEqual(KILLS);
        expect(result.cuts).toBe(2);
        expect(rows.length).toBe(result.produced);
        expect(new Set(rows).size).toBe(result.produced);
      }, 240_000);
    });
  });
}
