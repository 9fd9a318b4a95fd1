// Soak: does anything grow without bound? (docs/operations.md, "What each table holds"; docs/bench.md, "Soak")
//   npx -y tsx bench/soak.ts --minutes 30 --engine postgres|sqlite [--broker nats|rabbitmq] [--sample-ms 60000]
//     [--cut-every-ms 60000] [--keys 10000] [--rate 20] [--out bench/results]
// Runs, for `minutes`, 10 000 distinct keys churning through one store (per-key concurrency and rate
// limits, ordering keys, unique keys), cancels of waiting and running jobs, job flows, workflow runs,
// inbox claims, locks, stream events, audit entries and an outbox dispatcher publishing to the real
// NATS JetStream (or RabbitMQ) through a TCP proxy whose connections are cut every `cut-every-ms`,
// with the retention runner on (short retentions, so a 30-minute run reaches its steady state).
// Every `sample-ms` it samples (after a full GC) the heap, the RSS, the open handles
// (`process.getActiveResourcesInfo()`) and every table's row count, and at the end writes the curves
// (CSV) and a summary (first and last sample after the warm-up, the maximum, and the slope of the
// second half per 10 minutes) under `out`. Not run in CI.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Store } from '../lib/contract/types.js';
import { OutboxDispatcher } from '../lib/outbox/index.js';
import { NatsJetStreamPublisher, RabbitMqPublisher, type Publisher } from '../lib/publishers/index.js';
import { QueueWorker } from '../lib/worker/index.js';
import { createWorkflows, defineWorkflow } from '../lib/workflows/index.js';
import { allTableRows } from '../test/helpers/table-rows.js';
import { TcpProxy } from '../test/helpers/tcp-proxy.js';
import { pgAvailable, pgExec } from './lib/pg.js';
import { PG_URL, ROOT } from './lib/util.js';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : dflt;
}
const minutes = Number(arg('minutes', '30'));
const engine = arg('engine', 'postgres') as 'postgres' | 'sqlite';
const broker = arg('broker', 'nats') as 'nats' | 'rabbitmq';
const sampleMs = Number(arg('sample-ms', '60000'));
const cutEveryMs = Number(arg('cut-every-ms', '60000'));
const KEYS = Number(arg('keys', '10000'));
/** Producer ticks per second; each tick enqueues a keyed, an ordered and a unique job, an outbox message, … */
const rate = Number(arg('rate', '20'));
const outDir = arg('out', join(ROOT, 'bench', 'results'));
if (!['postgres', 'sqlite'].includes(engine) || !['nats', 'rabbitmq'].includes(broker) || !(minutes > 0))
  throw new Error('usage: bench/soak.ts --minutes N --engine postgres|sqlite [--broker nats|rabbitmq]');

// A full GC before each sample, so the heap figure is what is still reachable.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const RETAIN_MS = 60_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const log = (m: string): void => console.log(`[soak ${new Date().toISOString().slice(11, 19)}] ${m}`);
// The handlers' failures are the soak's own (retries, dead letters, cancels): not logged.
const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };

// ── the store ─────────────────────────────────────────────────────────
let store: Store;
let location: string;
let tmp: string | null = null;
if (engine === 'postgres') {
  const unavailable = await pgAvailable();
  if (unavailable) throw new Error(unavailable);
  location = `soak_${Date.now().toString(36)}`;
  const { openPostgresStore } = await import('../lib/engines/postgres/index.js');
  store = await openPostgresStore({ connectionString: PG_URL, schema: location, poolSize: 8, logger: quiet });
} else {
  tmp = mkdtempSync(join(tmpdir(), 'alkstore-soak-'));
  location = join(tmp, 'soak.db');
  const { openSqliteStore } = await import('../lib/engines/sqlite/index.js');
  store = await openSqliteStore({ path: location, logger: quiet });
}

// ── the broker, behind a proxy whose connections are cut ───────────────
const id = `${process.pid}_${Date.now().toString(36)}`;
let publisher: Publisher;
let proxy: TcpProxy;
let brokerCleanup: () => Promise<void>;
if (broker === 'nats') {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: '127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  const stream = `SOAK_${id}`.toUpperCase();
  // Capped, so the broker itself stays flat.
  await jsm.streams.add({ name: stream, subjects: [`soak_${id}.>`], max_msgs: 10_000 });
  proxy = new TcpProxy('127.0.0.1', 4222);
  const port = await proxy.start();
  publisher = new NatsJetStreamPublisher({
    stream,
    subject: `soak_${id}.out`,
    servers: `127.0.0.1:${port}`,
    reconnectWaitMs: 100,
    connectOptions: { reconnectTimeWait: 100 },
  });
  brokerCleanup = async () => {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
  };
} else {
  const amqp = await import('amqplib');
  const conn = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  const ch = await conn.createChannel();
  const exchange = `soak_${id}`;
  await ch.assertExchange(exchange, 'topic', { durable: false, autoDelete: false });
  const q = await ch.assertQueue(`soak_${id}`, { durable: false, arguments: { 'x-max-length': 10_000 } });
  await ch.bindQueue(q.queue, exchange, '#');
  proxy = new TcpProxy('127.0.0.1', 5672);
  const port = await proxy.start();
  publisher = new RabbitMqPublisher({
    exchange,
    routingKey: 'out',
    url: `amqp://guest:guest@127.0.0.1:${port}`,
    reconnectWaitMs: 100,
  });
  brokerCleanup = async () => {
    await ch.deleteQueue(q.queue).catch(() => undefined);
    await ch.deleteExchange(exchange).catch(() => undefined);
    await conn.close();
  };
}

// ── the work ──────────────────────────────────────────────────────────
const stop = new AbortController();
const counts = {
  ticks: 0,
  enqueued: 0,
  handled: 0,
  cancels: 0,
  flows: 0,
  runs: 0,
  claims: 0,
  locks: 0,
  cuts: 0,
  errors: 0,
};
const fail = (what: string) => (err: unknown) => {
  counts.errors++;
  if (counts.errors <= 20) log(`${what} failed: ${err instanceof Error ? err.message : String(err)}`);
};

const jobs = store.queue('soak', {
  resultRetentionMs: RETAIN_MS,
  deadLetterRetentionMs: RETAIN_MS,
  backoffBaseMs: 200,
});
await jobs.setLimits({ concurrencyLimit: 2, keyRateLimit: { max: 5, perMs: 1000 } });
const flowQueue = store.queue('soak-flow', { resultRetentionMs: RETAIN_MS });
const worker = new QueueWorker({
  queue: jobs,
  name: 'soak',
  concurrency: 16,
  idlePollIntervalMs: 1000,
  drainTimeoutMs: 5000,
  workerId: 'soak-worker',
  logger: quiet,
  handler: async (job, signal) => {
    const p = job.payload as { n: number; hold?: boolean; dies?: boolean };
    if (p.hold) {
      // Runs until its cancel aborts it (or a minute passes).
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 60_000);
        signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
    }
    if (p.dies) throw new Error('dies');
    if (p.n % 50 === 0 && job.attempts === 1) throw new Error('first attempt fails');
    counts.handled++;
    return p.n % 3 === 0 ? { n: p.n } : undefined;
  },
});
const flowWorker = new QueueWorker({
  queue: flowQueue,
  name: 'soak-flow',
  concurrency: 8,
  idlePollIntervalMs: 1000,
  drainTimeoutMs: 5000,
  workerId: 'soak-flow-worker',
  logger: quiet,
  handler: async (job) => (job.payload === 'parent' ? 'done' : undefined),
});
worker.start();
flowWorker.start();

const dispatcher = new OutboxDispatcher({
  store,
  outbox: 'soak-out',
  publisher,
  logger: quiet,
  settings: { publishTimeoutMs: 2000, retry: { baseMs: 50, maxDelayMs: 1000, maxAttempts: 100 } },
});
const dispatching = dispatcher.run(stop.signal).catch(fail('dispatcher'));

const wf = defineWorkflow('soak-wf', {
  async run(input: { n: number }, ctx) {
    const a = await ctx.step('a', () => input.n + 1);
    await ctx.sleep(200);
    return ctx.step('b', () => a * 2);
  },
});
const workflows = createWorkflows(store, {
  workflows: [wf],
  namespace: 'soak',
  retentionMs: RETAIN_MS,
  logger: quiet,
  idlePollIntervalMs: 1000,
});

const inbox = store.inbox('soak-in', { maxDeliveries: 1, ackWaitMs: 1000, maxBackoffMs: 0, producerHorizonMs: 0 });
const retention = store
  .runRetention(stop.signal, {
    intervalMs: 10_000,
    everyQueue: true,
    inboxRetentionMs: RETAIN_MS,
    receiptRetentionMs: RETAIN_MS,
    auditRetentionMs: RETAIN_MS,
    streamRetention: { 'soak-events': RETAIN_MS },
    onError: fail('retention'),
  })
  .catch(fail('retention'));

const cutter = setInterval(() => {
  counts.cuts += proxy.cut() > 0 ? 1 : 0;
}, cutEveryMs);

async function tick(n: number): Promise<void> {
  const k = n % KEYS;
  counts.ticks++;
  const ops: Promise<unknown>[] = [
    jobs.enqueue({ n }, { concurrencyKey: `c${k}`, rateLimitKey: `r${k}` }),
    jobs.enqueue({ n: n + 1 }, { orderingKey: `o${k}` }),
    jobs.enqueue({ n: n + 2 }, { uniqueKey: `u${(k * 7919) % KEYS}` }),
    store.outboxEnqueue('soak-out', { n }, { orderingKey: `p${k % 100}` }),
    store.withTx(async (tx) => {
      if ((await inbox.claim(tx, `m${n}`)) === 'claimed') await tx.publish('soak-events', { n });
    }),
    (async () => {
      const lock = await store.tryLock(`soak-lock-${k}`, 'soak', 500);
      counts.locks++;
      if (lock && n % 2 === 0) await lock.release(); // the rest lapse
    })(),
  ];
  counts.enqueued += 4;
  counts.claims++;
  if (n % 5 === 0) {
    // A cancel of a waiting job.
    ops.push(
      jobs.enqueue({ n }, { delayMs: 600_000 }).then(async (jid) => {
        await jobs.cancel(jid);
        counts.cancels++;
      }),
    );
  }
  if (n % 20 === 0) {
    // A cancel of a running job.
    ops.push(
      jobs.enqueue({ n, hold: true }).then(async (jid) => {
        await sleep(500);
        await jobs.cancel(jid);
        counts.cancels++;
      }),
    );
  }
  if (n % 100 === 0) ops.push(jobs.enqueue({ n, dies: true }, { maxAttempts: 1 }));
  if (n % 10 === 0) {
    ops.push(
      flowQueue.enqueueFlow({ payload: 'parent', children: [{ payload: 'a' }, { payload: 'b' }] }).then(() => {
        counts.flows++;
      }),
    );
  }
  if (n % 20 === 0) ops.push(workflows.start(wf, { n }).then(() => counts.runs++));
  if (n % 200 === 0) ops.push(store.admin().auditLog().publish({ action: 'soak', n }));
  const results = await Promise.allSettled(ops);
  for (const r of results) if (r.status === 'rejected') fail('tick')(r.reason);
}

async function produce(): Promise<void> {
  let n = 0;
  const interval = 1000 / rate;
  let next = performance.now();
  const inFlight = new Set<Promise<void>>();
  while (!stop.signal.aborted) {
    const p = tick(n++).finally(() => inFlight.delete(p));
    inFlight.add(p);
    // At most a second of ticks in flight: a slow store slows the producer instead of piling up promises.
    while (inFlight.size >= rate) await Promise.race(inFlight);
    next += interval;
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
    else next = performance.now();
  }
  await Promise.allSettled(inFlight);
}

// ── the samples ───────────────────────────────────────────────────────
type Row = Record<string, number | string>;
const samples: Row[] = [];
const startedAt = performance.now();
async function sample(): Promise<void> {
  gc();
  const mem = process.memoryUsage();
  const handles = process.getActiveResourcesInfo();
  const byType: Record<string, number> = {};
  for (const h of handles) byType[h] = (byType[h] ?? 0) + 1;
  const tables = await allTableRows(engine, location);
  const row: Row = {
    minute: Number(((performance.now() - startedAt) / 60_000).toFixed(2)),
    heap_mb: Number((mem.heapUsed / 2 ** 20).toFixed(2)),
    rss_mb: Number((mem.rss / 2 ** 20).toFixed(2)),
    handles: handles.length,
    ...Object.fromEntries(Object.entries(byType).map(([k, v]) => [`h_${k}`, v])),
    ...Object.fromEntries(Object.entries(counts).map(([k, v]) => [`n_${k}`, v])),
    ...Object.fromEntries(Object.entries(tables).map(([k, v]) => [`t_${k}`, v])),
  };
  samples.push(row);
  log(
    `minute ${row.minute}: heap ${row.heap_mb} MB, rss ${row.rss_mb} MB, handles ${row.handles}, ` +
      `jobs ${tables.jobs ?? 0}, outcomes ${tables.job_outcomes ?? 0}, inbox ${tables.inbox ?? 0}, ` +
      `events ${tables.stream_events ?? tables.events ?? 0}, heads ${tables.stream_heads ?? 0}, ticks ${counts.ticks}, handled ${counts.handled}, errors ${counts.errors}`,
  );
}

log(`engine ${engine} (${location}), broker ${broker}, ${minutes} min, ${KEYS} keys, ${rate} ticks/s`);
const producing = produce();
await sample();
const endAt = startedAt + minutes * 60_000;
while (performance.now() < endAt) {
  await sleep(Math.min(sampleMs, endAt - performance.now()));
  await sample().catch(fail('sample'));
}

// ── stop, write the curves ────────────────────────────────────────────
stop.abort();
clearInterval(cutter);
await producing;
await Promise.all([worker.stop(), flowWorker.stop(), workflows.close(), dispatching, retention]);
await store.close();
await proxy.stop();
await brokerCleanup();
if (engine === 'postgres') await pgExec(`DROP SCHEMA IF EXISTS "${location}" CASCADE`);
else if (tmp) rmSync(tmp, { recursive: true, force: true });

const columns = [...new Set(samples.flatMap((s) => Object.keys(s)))];
const csv = [columns.join(','), ...samples.map((s) => columns.map((c) => s[c] ?? 0).join(','))].join('\n');
const stamp = new Date().toISOString().replace(/[-:]/g, '').slice(0, 13);
const base = join(outDir, `soak-${engine}-${broker}-${stamp}`);
mkdirSync(outDir, { recursive: true });
writeFileSync(`${base}.csv`, `${csv}\n`);

/** Least-squares slope of `ys` over `xs` (per unit of x). */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}
// Warm-up: the retentions are a minute, so the tables fill during the first two minutes.
const warm = samples.filter((s) => Number(s.minute) >= Math.min(3, minutes / 3));
const half = warm.slice(Math.floor(warm.length / 2));
const lines = [
  `# Soak: ${engine}, ${broker}, ${minutes} min, ${KEYS} keys, ${rate} ticks/s (${counts.ticks} ticks, ${counts.handled} jobs handled, ${counts.cancels} cancels, ${counts.flows} flows, ${counts.runs} workflow runs, ${counts.cuts} connection cuts, ${counts.errors} errors)`,
  '',
  `Samples every ${sampleMs / 1000} s after a full GC; "first" is the first sample after the warm-up (minute ${warm[0]?.minute ?? '-'}), "slope" the least-squares slope of the second half, per 10 minutes.`,
  '',
  '| Series | first | last | max | slope / 10 min |',
  '| --- | ---: | ---: | ---: | ---: |',
];
for (const c of columns) {
  if (c === 'minute' || c.startsWith('n_')) continue;
  const ys = warm.map((s) => Number(s[c] ?? 0));
  if (ys.length === 0) continue;
  const sl = slope(
    half.map((s) => Number(s.minute)),
    half.map((s) => Number(s[c] ?? 0)),
  );
  lines.push(`| ${c} | ${ys[0]} | ${ys[ys.length - 1]} | ${Math.max(...ys)} | ${(sl * 10).toFixed(2)} |`);
}
writeFileSync(`${base}.md`, `${lines.join('\n')}\n`);
console.log(lines.join('\n'));
log(`wrote ${base}.csv and ${base}.md`);
process.exit(0);
