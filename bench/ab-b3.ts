/**
 * Interleaved A/B of B3 (wake latency with the real worker) of two checkouts
 * in ONE process: each side runs the Nest `QueueWorker` of its own checkout
 * on an idle queue of one store, and a sample is the time from just before
 * `queue.enqueue(payload)` (same store) until the handler starts — what
 * bench/workloads.ts `b3` measures. Samples alternate A, B, B, A, … with a
 * short random pause before each, so a burst of load on the shared machine
 * lands on both sides; the bare NOTIFY → LISTEN round trip between two plain
 * connections is sampled in the same rotation (PostgreSQL).
 *
 *   npx -y tsx bench/ab-b3.ts <dirA> <dirB> [samples=300] [--engines postgres,sqlite]
 *
 * SQLite runs on a temporary file with the store's defaults (synchronous FULL).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { loadOpen, PG_URL, type Open } from './lib/ab-checkout.js';
import type { Job, Queue, Store } from '../lib/contract/types.js';

const argv = process.argv.slice(2);
const enginesAt = argv.indexOf('--engines');
const ENGINES = (enginesAt >= 0 ? argv[enginesAt + 1]! : 'postgres,sqlite').split(',');
const args = enginesAt < 0 ? argv : argv.filter((_, i) => i !== enginesAt && i !== enginesAt + 1);
const [dirA, dirB, samplesArg] = args;
if (!dirA || !dirB) throw new Error('usage: ab-b3.ts <dirA> <dirB> [samples] [--engines postgres,sqlite]');
const SAMPLES = Number(samplesArg ?? 300);
const WARMUP = 20;

/** The `QueueWorker` constructor of a checkout (only what this tool passes). */
type WorkerCtor = new (o: {
  queue: Queue;
  handler: (job: Job) => Promise<unknown>;
  name: string;
  concurrency: number;
  idlePollIntervalMs: number;
  drainTimeoutMs: number;
  workerId: string;
  logger: { log: (m: string) => void; warn: (m: string) => void; error: (m: string) => void };
}) => { start(): void; stop(): Promise<void> };

interface Checkout {
  open: Open;
  Worker: WorkerCtor;
}

async function loadCheckout(dir: string): Promise<Checkout> {
  const open = await loadOpen(dir);
  const mod = (await import(pathToFileURL(join(resolve(dir), 'lib/worker/queue-worker.js')).href)) as {
    QueueWorker: WorkerCtor;
  };
  return { open, Worker: mod.QueueWorker };
}

interface Side {
  name: string;
  store: Store;
  queue: Queue;
  worker: { stop(): Promise<void> };
  /** Resolves the handler start of sample `i`. */
  arrivals: Map<number, (t: number) => void>;
  lat: number[];
}

const logger = {
  log: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};

async function side(name: string, c: Checkout, store: Store): Promise<Side> {
  const queue = store.queue('b3');
  const arrivals = new Map<number, (t: number) => void>();
  const worker = new c.Worker({
    queue,
    handler: async (job) => {
      const t = performance.now();
      const i = (job.payload as { i: number }).i;
      arrivals.get(i)?.(t);
    },
    name: `ab-b3 ${name}`,
    // What bench/systems/alkstore.ts runs for B3 (CONCURRENCY, adaptive prefetch, 1 s idle poll).
    concurrency: 10,
    idlePollIntervalMs: 1000,
    drainTimeoutMs: 2000,
    workerId: `ab-b3-${name}`,
    logger,
  });
  worker.start();
  return { name, store, queue, worker, arrivals, lat: [] };
}

let seq = 0;
async function sample(s: Side, record: boolean): Promise<void> {
  const i = ++seq;
  const started = new Promise<number>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`${s.name}: handler of sample ${i} did not start within 5 s`)), 5000);
    s.arrivals.set(i, (t) => {
      clearTimeout(timer);
      res(t);
    });
  });
  const t0 = performance.now();
  await s.queue.enqueue({ i });
  const t1 = await started;
  s.arrivals.delete(i);
  if (record) s.lat.push(t1 - t0);
}

async function bare(listener: pg.Client, sender: pg.Client, i: number): Promise<number> {
  const got = new Promise<void>((res) => listener.once('notification', () => res()));
  const t0 = performance.now();
  await sender.query(`SELECT pg_notify('abb3_bare', $1)`, [String(i)]);
  await got;
  return performance.now() - t0;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function rotate(a: Side, b: Side, between?: () => Promise<void>): Promise<void> {
  // Let each worker's first (empty) claim return: both idle.
  await sleep(300);
  for (let i = 0; i < WARMUP; i++) for (const s of [a, b]) await sample(s, false);
  for (let i = 0; i < SAMPLES; i++) {
    for (const s of i % 2 === 0 ? [a, b] : [b, a]) {
      await sleep(2 + Math.random() * 8);
      await sample(s, true);
    }
    if (between) {
      await sleep(2 + Math.random() * 8);
      await between();
    }
  }
}

const line = (s: Side): string =>
  `${s.name}: enqueue→handler p50 ${pct(s.lat, 50).toFixed(2)} ms (p95 ${pct(s.lat, 95).toFixed(2)})`;

const [A, B] = await Promise.all([loadCheckout(dirA), loadCheckout(dirB)]);
const out: string[] = [
  `A = ${resolve(dirA)}`,
  `B = ${resolve(dirB)}`,
  `${SAMPLES} samples per side, alternating ABBA; QueueWorker concurrency 10, adaptive prefetch; producer and worker on one store`,
];

if (ENGINES.includes('postgres')) {
  const tag = Date.now().toString(36);
  const schemas = [`abb3_a_${tag}`, `abb3_b_${tag}`];
  const a = await side('A', A, await A.open({ url: PG_URL, schema: schemas[0] }));
  const b = await side('B', B, await B.open({ url: PG_URL, schema: schemas[1] }));
  const listener = new pg.Client({ connectionString: PG_URL });
  const sender = new pg.Client({ connectionString: PG_URL });
  await listener.connect();
  await sender.connect();
  await listener.query('LISTEN abb3_bare');
  const bareMs: number[] = [];
  try {
    let n = 0;
    await rotate(a, b, async () => {
      bareMs.push(await bare(listener, sender, n++));
    });
    const bp50 = pct(bareMs, 50);
    out.push(
      `[postgres] bare pg_notify → LISTEN p50 ${bp50.toFixed(2)} ms (p95 ${pct(bareMs, 95).toFixed(2)})`,
      `[postgres] ${line(a)}, p50 / bare p50 ${(pct(a.lat, 50) / bp50).toFixed(2)}x`,
      `[postgres] ${line(b)}, p50 / bare p50 ${(pct(b.lat, 50) / bp50).toFixed(2)}x`,
      `[postgres] B/A p50 ${(pct(b.lat, 50) / pct(a.lat, 50)).toFixed(3)}, p95 ${(pct(b.lat, 95) / pct(a.lat, 95)).toFixed(3)}`,
    );
  } finally {
    for (const s of [a, b]) {
      await s.worker.stop();
      await s.store.close();
    }
    await listener.end();
    for (const schema of schemas) await sender.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sender.end();
  }
}

if (ENGINES.includes('sqlite')) {
  const dir = mkdtempSync(join(tmpdir(), 'ab-b3-'));
  const a = await side('A', A, await A.open({ url: `sqlite:${join(dir, 'a.db')}` }));
  const b = await side('B', B, await B.open({ url: `sqlite:${join(dir, 'b.db')}` }));
  try {
    await rotate(a, b);
    out.push(
      `[sqlite] ${line(a)}`,
      `[sqlite] ${line(b)}`,
      `[sqlite] B/A p50 ${(pct(b.lat, 50) / pct(a.lat, 50)).toFixed(3)}, p95 ${(pct(b.lat, 95) / pct(a.lat, 95)).toFixed(3)}`,
    );
  } finally {
    for (const s of [a, b]) {
      await s.worker.stop();
      await s.store.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

process.stdout.write(`${out.join('\n')}\n`);
