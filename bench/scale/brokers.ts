/**
 * B8: outbox → broker end to end beside a bare publish loop, in the same run
 * (issue #26). For NATS JetStream (PubAck) and RabbitMQ (publisher confirms):
 *
 * - `bare`: the broker client alone, 64 publishes in flight, each awaiting its ack;
 * - `outbox`: N messages committed to the outbox, then 1, 2 and 4 relays
 *   (dispatchers with the broker publisher, concurrency 64, in this process)
 *   until the broker holds all N: msgs/s from the moment every relay is
 *   connected, and the ratio to `bare`; `1relay_c256` is one relay with
 *   concurrency 256 (a deeper pipeline); `1relay_no_receipts` skips the
 *   receipt write;
 * - `cpu_us_per_msg`: this process's CPU time per message (user + system) of
 *   the bare loop and of one relay: the relay's ceiling on a CPU-bound machine
 *   is the ratio of the two;
 * - `latency`: one message per transaction at a steady pace while one relay
 *   runs, commit (the transaction resolved) to the consumer receiving it: p50 / p99.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { ChannelModel } from 'amqplib';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { NatsJetStreamPublisher, RabbitMqPublisher, type Publisher } from '../../lib/publishers/index.js';
import type { Metrics } from '../workloads.js';
import { percentile, uniqueId } from '../lib/util.js';
import { scaleTarget, type ScaleEngine } from './env.js';

const NATS = '127.0.0.1:4222';
const AMQP = 'amqp://guest:guest@127.0.0.1:5672';
const IN_FLIGHT = 64;
const RELAYS = [1, 2, 4] as const;
/** `B8_VARIANTS=1,no-receipts`: only these of 1, 2, 4, c256, no-receipts, latency (default every one). */
const variants = process.env.B8_VARIANTS ? process.env.B8_VARIANTS.split(',') : null;
const quiet = { log: () => undefined, warn: () => undefined, error: (m: string) => process.stderr.write(`${m}\n`) };

interface Broker {
  name: 'js' | 'rmq';
  /** A fresh destination; returns its publisher factory, a bare publish, a count of stored messages and a receive hook. */
  fresh(): Promise<{
    publisher: () => Publisher;
    bare: (i: number) => Promise<void>;
    stored: () => Promise<number>;
    onReceive: (fn: (id: string) => void) => Promise<void>;
    cleanup: () => Promise<void>;
  }>;
  close(): Promise<void>;
}

async function jetstreamBroker(): Promise<Broker> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstream, jetstreamManager, AckPolicy, DeliverPolicy } = await import('@nats-io/jetstream');
  const nc: NatsConnection = await connect({ servers: NATS, noAsyncTraces: true }); // the bare loop on the publisher's own connection settings
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  return {
    name: 'js',
    async fresh() {
      const stream = uniqueId('B8').replace(/[^A-Za-z0-9_]/g, '_');
      const subject = `${stream.toLowerCase()}.orders`;
      await jsm.streams.add({
        name: stream,
        subjects: [`${stream.toLowerCase()}.>`],
        duplicate_window: 120_000_000_000,
      });
      let stop: (() => void) | null = null;
      return {
        publisher: () => new NatsJetStreamPublisher({ stream, subject, servers: NATS }),
        bare: async (i) => void (await js.publish(subject, JSON.stringify({ i }), { msgID: `bare-${i}` })),
        stored: async () => (await jsm.streams.info(stream)).state.messages,
        async onReceive(fn) {
          await jsm.consumers.add(stream, {
            durable_name: 'lat',
            ack_policy: AckPolicy.None,
            deliver_policy: DeliverPolicy.New,
          });
          const c = await js.consumers.get(stream, 'lat');
          const msgs = await c.consume();
          stop = () => void msgs.stop();
          void (async () => {
            for await (const m of msgs) fn(m.headers?.get('Nats-Msg-Id') ?? '');
          })();
        },
        async cleanup() {
          stop?.();
          await jsm.streams.delete(stream).catch(() => undefined);
        },
      };
    },
    close: () => nc.close(),
  };
}

async function rabbitBroker(): Promise<Broker> {
  const amqp = await import('amqplib');
  const conn: ChannelModel = await amqp.connect(AMQP);
  const admin = await conn.createChannel();
  const confirm = await conn.createConfirmChannel();
  return {
    name: 'rmq',
    async fresh() {
      const exchange = uniqueId('b8.ex');
      const queue = uniqueId('b8.q');
      await admin.assertExchange(exchange, 'direct', { durable: true });
      await admin.assertQueue(queue, { durable: true });
      await admin.bindQueue(queue, exchange, 'orders');
      let tag: string | null = null;
      return {
        publisher: () => new RabbitMqPublisher({ url: AMQP, exchange, routingKey: 'orders' }),
        bare: (i) =>
          new Promise<void>((resolve, reject) => {
            confirm.publish(
              exchange,
              'orders',
              Buffer.from(JSON.stringify({ i })),
              { persistent: true, mandatory: true, messageId: `bare-${i}` },
              (err: unknown) => (err ? reject(err instanceof Error ? err : new Error('nack')) : resolve()),
            );
          }),
        stored: async () => (await admin.checkQueue(queue)).messageCount,
        async onReceive(fn) {
          await admin.purgeQueue(queue);
          tag = (await admin.consume(queue, (m) => m && fn(String(m.properties.messageId)), { noAck: true }))
            .consumerTag;
        },
        async cleanup() {
          if (tag) await admin.cancel(tag).catch(() => undefined);
          await admin.deleteQueue(queue).catch(() => undefined);
          await admin.deleteExchange(exchange).catch(() => undefined);
        },
      };
    },
    close: () => conn.close(),
  };
}

/** Microseconds of this process's CPU (user + system) since `from`, per message. */
function cpuPerMessage(from: NodeJS.CpuUsage, n: number): number {
  const c = process.cpuUsage(from);
  return Math.round((c.user + c.system) / n);
}

async function bareRate(n: number, publish: (i: number) => Promise<void>): Promise<{ rate: number; cpuUs: number }> {
  let next = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await publish(next++);
    }),
  );
  return { rate: n / ((performance.now() - t0) / 1000), cpuUs: cpuPerMessage(c0, n) };
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`B8: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function relays(
  store: Store,
  outbox: string,
  count: number,
  publisher: () => Publisher,
  receipts = true,
  concurrency = IN_FLIGHT,
): { connected: () => Promise<void>; stop: () => Promise<void> } {
  const ac = new AbortController();
  const dispatchers = Array.from(
    { length: count },
    () =>
      new OutboxDispatcher({
        store,
        outbox,
        publisher: publisher(),
        receipts,
        logger: quiet,
        settings: { claimSize: 64, concurrency, busyPollIntervalMs: 5 },
      }),
  );
  const runs = dispatchers.map((d) => d.run(ac.signal));
  return {
    // The bare loop's connection is open before its clock starts: so are the relays'.
    connected: () =>
      waitUntil('every relay connected', async () => dispatchers.every((d) => d.health().status === 'up')),
    stop: async () => {
      ac.abort();
      await Promise.all(runs);
    },
  };
}

async function fill(store: Store, outbox: string, n: number): Promise<void> {
  for (let done = 0; done < n; done += 500) {
    await store.withTx(async (tx) => {
      for (let i = done; i < Math.min(n, done + 500); i++) await tx.outboxEnqueue(outbox, { i });
    });
  }
}

/** B8 on one engine: both brokers, bare vs outbox with 1/2/4 relays, and commit-to-consumer latency. */
export async function brokerWorkload(
  engine: ScaleEngine,
  jobs: number,
  samples: number,
  log: (m: string) => void,
): Promise<Metrics> {
  const out: Metrics = {};
  const n = Math.max(500, jobs);
  for (const make of [jetstreamBroker, rabbitBroker]) {
    const broker = await make();
    const target = await scaleTarget(engine);
    const store = await target.open();
    try {
      const bareDest = await broker.fresh();
      const { rate: bare, cpuUs: bareCpu } = await bareRate(n, bareDest.bare);
      await bareDest.cleanup();
      out[`B8_${broker.name}_${engine}_bare_msgs_s`] = Math.round(bare);
      out[`B8_${broker.name}_${engine}_bare_cpu_us_per_msg`] = bareCpu;
      log(`B8 ${broker.name} ${engine}: bare ${Math.round(bare)} msgs/s, ${bareCpu} µs CPU per message`);
      for (const r of [...RELAYS, 'c256', 'no-receipts'] as const) {
        if (variants !== null && !variants.includes(String(r))) continue;
        const dest = await broker.fresh();
        const outbox = uniqueId(`b8-${r}`);
        await fill(store, outbox, n);
        const run =
          typeof r === 'number'
            ? relays(store, outbox, r, dest.publisher)
            : relays(store, outbox, 1, dest.publisher, r !== 'no-receipts', r === 'c256' ? 256 : IN_FLIGHT);
        await run.connected();
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const before = await dest.stored();
        await waitUntil(`${n} messages on the broker`, async () => (await dest.stored()) >= n);
        const rate = (n - before) / ((performance.now() - t0) / 1000);
        const cpuUs = cpuPerMessage(c0, Math.max(1, n - before));
        await run.stop();
        await dest.cleanup();
        const label = r === 'no-receipts' ? '1relay_no_receipts' : r === 'c256' ? '1relay_c256' : `${r}relay`;
        out[`B8_${broker.name}_${engine}_outbox_${label}_msgs_s`] = Math.round(rate);
        out[`B8_${broker.name}_${engine}_outbox_${label}_vs_bare`] = Math.round((rate / bare) * 100) / 100;
        if (r === 1) out[`B8_${broker.name}_${engine}_outbox_1relay_cpu_us_per_msg`] = cpuUs;
        log(
          `B8 ${broker.name} ${engine}: outbox ${label} ${Math.round(rate)} msgs/s (${(rate / bare).toFixed(2)}× bare), ${cpuUs} µs CPU per message`,
        );
      }
      if (variants !== null && !variants.includes('latency')) continue;
      const dest = await broker.fresh();
      const committed = new Map<string, number>();
      const received = new Map<string, number>();
      await dest.onReceive((id) => received.set(id, performance.now()));
      const outbox = uniqueId('b8-lat');
      const run = relays(store, outbox, 1, dest.publisher);
      // The consumer sees the message id (`<storeId>:<rowId>`, the broker's dedup id), not the row id.
      const messageIdOf = store.outbox(outbox);
      for (let i = 0; i < samples; i++) {
        const id = await store.withTx((tx) => tx.outboxEnqueue(outbox, { i }));
        committed.set(messageIdOf.messageId(id), performance.now());
        await new Promise((res) => setTimeout(res, 5));
      }
      await waitUntil(
        'every latency sample received',
        async () => [...committed.keys()].every((id) => received.has(id)),
        60_000,
      );
      await run.stop();
      // A message can reach the consumer before the producer's commit call has returned: counted as 0.
      const lat = [...committed].map(([id, t]) => Math.max(0, received.get(id)! - t));
      await dest.cleanup();
      out[`B8_${broker.name}_${engine}_commit_to_consumer_p50_ms`] = Math.round(percentile(lat, 50) * 10) / 10;
      out[`B8_${broker.name}_${engine}_commit_to_consumer_p99_ms`] = Math.round(percentile(lat, 99) * 10) / 10;
      log(
        `B8 ${broker.name} ${engine}: commit→consumer p50 ${percentile(lat, 50).toFixed(1)} ms, p99 ${percentile(lat, 99).toFixed(1)} ms`,
      );
    } finally {
      await store.close();
      await target.cleanup();
      await broker.close();
    }
  }
  return out;
}
