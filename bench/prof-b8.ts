/**
 * Profiles B8's outbox → broker path with one or more relays: claims (count, rows per claim, time),
 * receipt and ack writes (count, rows per write, time), publish time and publishes in flight, this
 * process's and the whole machine's CPU per message, and the rate beside a bare loop.
 *   npx -y tsx bench/prof-b8.ts [sqlite|postgres] [js|rmq] [messages] [relays] [concurrency] [claimSize] [receipts|no-receipts]
 */
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Job, Outbox, Queue, Store } from '../lib/contract/types.js';
import { OutboxDispatcher } from '../lib/outbox/index.js';
import { NatsJetStreamPublisher, RabbitMqPublisher, type Publisher } from '../lib/publishers/index.js';
import { scaleTarget } from './scale/env.js';
import { uniqueId } from './lib/util.js';
import { BROKER_PROCESSES, cpuProfile, machineBusyMs, POSTGRES_PROCESSES, processesMs } from './lib/cpu.js';

const engine = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite';
const broker = process.argv[3] === 'rmq' ? 'rmq' : 'js';
const n = Number(process.argv[4] ?? 10_000);
const relayCount = Number(process.argv[5] ?? 1);
const concurrency = Number(process.argv[6] ?? 64);
const claimSize = Number(process.argv[7] ?? 64);
const receipts = process.argv[8] !== 'no-receipts';
const quiet = {
  log: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};

let live = 0;
const stat = () => ({ calls: 0, rows: 0, ms: 0 });
const s = { claim: stat(), ack: stat(), receipts: stat(), publish: stat() };

function instrument(store: Store, name: string): Pick<Store, 'outbox'> {
  const ob = store.outbox(name);
  const q0 = ob.queue;
  const q = Object.create(q0) as Queue;
  q.claimBatch = async (max, w, o) => {
    const t = performance.now();
    const r = await q0.claimBatch(max, w, o);
    s.claim.ms += performance.now() - t;
    s.claim.calls += 1;
    s.claim.rows += r.length;
    return r;
  };
  q.ackBatch = async (jobs: readonly Pick<Job, 'id' | 'claimToken'>[]) => {
    const t = performance.now();
    const r = await q0.ackBatch(jobs);
    s.ack.ms += performance.now() - t;
    s.ack.calls += 1;
    s.ack.rows += jobs.length;
    return r;
  };
  // The relay's own ack with receipts goes straight to the backing queue (an older checkout's goes through the outbox).
  const qd = q0 as Queue & {
    ackDelivered?: (jobs: readonly Job[], outbox: string, rows: readonly unknown[]) => Promise<number>;
  };
  if (typeof qd.ackDelivered === 'function') {
    (q as typeof qd).ackDelivered = async (jobs, outbox, rows) => {
      const t = performance.now();
      const r = await qd.ackDelivered!(jobs, outbox, rows);
      s.ack.ms += performance.now() - t;
      s.ack.calls += 1;
      s.ack.rows += jobs.length;
      return r;
    };
  }
  const wrapped = Object.create(ob) as Outbox & { queue: Queue };
  Object.defineProperty(wrapped, 'queue', { value: q });
  wrapped.recordReceipts = async (rs) => {
    const t = performance.now();
    await ob.recordReceipts(rs);
    s.receipts.ms += performance.now() - t;
    s.receipts.calls += 1;
    s.receipts.rows += rs.length;
  };
  // The receipts written by the ack's own statement (an older checkout has no such call and records them apart).
  if (typeof ob.ackDelivered === 'function') {
    wrapped.ackDelivered = async (ds) => {
      const t = performance.now();
      const r = await ob.ackDelivered(ds);
      s.ack.ms += performance.now() - t;
      s.ack.calls += 1;
      s.ack.rows += ds.length;
      return r;
    };
  }
  return { outbox: () => wrapped } as unknown as Pick<Store, 'outbox'>;
}

function timed(p: Publisher): Publisher {
  return {
    broker: p.broker,
    connect: (c, sig) => p.connect(c, sig),
    health: () => p.health(),
    close: () => p.close(),
    publish: async (m, sig) => {
      live += 1;
      const t = performance.now();
      const r = await p.publish(m, sig);
      s.publish.ms += performance.now() - t;
      s.publish.calls += 1;
      live -= 1;
      return r;
    },
  };
}

const target = await scaleTarget(engine);
const store = await target.open();
let publisher: () => Publisher;
let stored: () => Promise<number>;
let bare: (i: number) => Promise<void>;
let cleanup: () => Promise<void>;
if (broker === 'js') {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstream, jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: '127.0.0.1:4222', noAsyncTraces: true }); // as the publisher's own connection
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const stream = uniqueId('PB8').replace(/[^A-Za-z0-9_]/g, '_');
  const subject = `${stream.toLowerCase()}.orders`;
  await jsm.streams.add({ name: stream, subjects: [`${stream.toLowerCase()}.>`], duplicate_window: 120_000_000_000 });
  publisher = () => new NatsJetStreamPublisher({ stream, subject, servers: '127.0.0.1:4222' });
  stored = async () => (await jsm.streams.info(stream)).state.messages;
  bare = async (i) =>
    void (await js.publish(`${stream.toLowerCase()}.bare`, JSON.stringify({ i }), { msgID: `bare-${i}` }));
  cleanup = async () => {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  };
} else {
  const amqp = await import('amqplib');
  const conn = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  const admin = await conn.createChannel();
  const confirm = await conn.createConfirmChannel();
  const exchange = uniqueId('pb8.ex');
  const queue = uniqueId('pb8.q');
  await admin.assertExchange(exchange, 'direct', { durable: true });
  await admin.assertQueue(queue, { durable: true });
  await admin.bindQueue(queue, exchange, 'orders');
  await admin.assertQueue(`${queue}.bare`, { durable: true });
  await admin.bindQueue(`${queue}.bare`, exchange, 'bare');
  publisher = () => new RabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:5672', exchange, routingKey: 'orders' });
  stored = async () => (await admin.checkQueue(queue)).messageCount;
  bare = (i) =>
    new Promise<void>((res, rej) => {
      confirm.publish(
        exchange,
        'bare',
        Buffer.from(JSON.stringify({ i })),
        { persistent: true, mandatory: true, messageId: `bare-${i}` },
        (err: unknown) => (err ? rej(new Error('nack')) : res()),
      );
    });
  cleanup = async () => {
    await admin.deleteQueue(queue).catch(() => undefined);
    await admin.deleteQueue(`${queue}.bare`).catch(() => undefined);
    await admin.deleteExchange(exchange).catch(() => undefined);
    await conn.close();
  };
}

let next = 0;
const cb = process.cpuUsage();
const mb = machineBusyMs();
const db0 = processesMs(POSTGRES_PROCESSES);
const bk0 = processesMs(BROKER_PROCESSES);
const tb = performance.now();
await Promise.all(
  Array.from({ length: 64 }, async () => {
    while (next < n) await bare(next++);
  }),
);
const bareRate = n / ((performance.now() - tb) / 1000);
const bareCpu = process.cpuUsage(cb);
const bareMachine = machineBusyMs() - mb;
const bareDb = processesMs(POSTGRES_PROCESSES) - db0;
const bareBroker = processesMs(BROKER_PROCESSES) - bk0;

const name = uniqueId('pb8');
for (let done = 0; done < n; done += 500) {
  await store.withTx(async (tx) => {
    for (let i = done; i < Math.min(n, done + 500); i++) await tx.outboxEnqueue(name, { i });
  });
}
const base = await stored();
const ac = new AbortController();
const pubs = Array.from({ length: relayCount }, () => timed(publisher()));
const dispatchers = pubs.map(
  (p) =>
    new OutboxDispatcher({
      store: instrument(store, name),
      outbox: name,
      publisher: p,
      receipts,
      logger: quiet,
      settings: { claimSize, concurrency, busyPollIntervalMs: 5 },
    }),
);
// Connect outside the timed window: the bare loop's connection is open too.
const stopProfile = await cpuProfile(process.env.B8_CPU_PROFILE);
const c0 = process.cpuUsage();
const m0 = machineBusyMs();
const db1 = processesMs(POSTGRES_PROCESSES);
const bk1 = processesMs(BROKER_PROCESSES);
const t0 = performance.now();
const runs = dispatchers.map((d) => d.run(ac.signal));
let connectedAt = 0;
// Publishes in flight, sampled every millisecond: how full the relay keeps its `concurrency` slots.
let samples = 0;
let liveSum = 0;
const sampler = setInterval(() => {
  samples++;
  liveSum += live;
}, 1);
while ((await stored()) - base < n) {
  if (!connectedAt && s.publish.calls > 0) connectedAt = performance.now();
  await new Promise((r) => setTimeout(r, 5));
}
const t1 = performance.now();
clearInterval(sampler);
const relayCpu = process.cpuUsage(c0);
const relayMachine = machineBusyMs() - m0;
const relayDb = processesMs(POSTGRES_PROCESSES) - db1;
const relayBroker = processesMs(BROKER_PROCESSES) - bk1;
await stopProfile();
ac.abort();
await Promise.all(runs);
const rate = n / ((t1 - t0) / 1000);
const fmt = (x: { calls: number; rows: number; ms: number }) =>
  `${x.calls} calls, ${(x.rows / Math.max(1, x.calls)).toFixed(1)} rows/call, ${(x.ms / Math.max(1, x.calls)).toFixed(2)} ms/call`;
console.log(
  `${engine} ${broker} n=${n} relays=${relayCount} concurrency=${concurrency} claimSize=${claimSize} receipts=${receipts}`,
);
console.log(
  `bare ${Math.round(bareRate)} msgs/s; outbox ${Math.round(rate)} msgs/s (${(rate / bareRate).toFixed(2)}×), first publish after ${(connectedAt - t0).toFixed(0)} ms`,
);
const us = (c: NodeJS.CpuUsage) => ((c.user + c.system) / n).toFixed(0);
const dbMs = s.claim.ms + s.receipts.ms + s.ack.ms;
console.log(
  `this process's CPU per message: bare ${us(bareCpu)} µs, outbox ${us(relayCpu)} µs; store calls ${((dbMs / n) * 1000).toFixed(0)} µs of wall per message (${engine === 'sqlite' ? 'synchronous, on this thread' : 'awaited, off this thread'})`,
);
console.log(
  `the whole machine's busy CPU per message (/proc/stat: this process, the database, the broker, anything else running): bare ${((bareMachine / n) * 1000).toFixed(0)} µs, outbox ${((relayMachine / n) * 1000).toFixed(0)} µs, of ${cpus().length} cores`,
);
const perMsg = (ms: number) => ((ms / n) * 1000).toFixed(0);
console.log(
  `of which PostgreSQL's processes: bare ${perMsg(bareDb)} µs, outbox ${perMsg(relayDb)} µs; the broker's: bare ${perMsg(bareBroker)} µs, outbox ${perMsg(relayBroker)} µs`,
);
console.log(
  `publishes in flight on average: ${(liveSum / Math.max(1, samples)).toFixed(1)} of concurrency ${concurrency * relayCount}`,
);
console.log(
  `claim: ${fmt(s.claim)}\nreceipts: ${fmt(s.receipts)}\nack: ${fmt(s.ack)}\npublish: ${s.publish.calls} calls, ${(s.publish.ms / Math.max(1, s.publish.calls)).toFixed(2)} ms/call`,
);
await cleanup();
await store.close();
await target.cleanup();
