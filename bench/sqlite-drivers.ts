/**
 * The SQLite engine on its two drivers, better-sqlite3 (A) and node:sqlite (B),
 * interleaved in ONE process (A, B, B, A, … chunks) so a burst of load on the
 * shared machine lands on both: B1 (single enqueues, each its own commit), B2
 * (claimBatch(10) + ackBatch drain of pre-enqueued jobs) and B3 (enqueue →
 * handler start through a real QueueWorker, hand-off off so each sample is a
 * commit, a wake and a claim). Needs a Node with node:sqlite (22.13+, 24) and a
 * better-sqlite3 built for it (.ci/run keeps one per Node in its cache).
 *
 *   npx -y tsx bench/sqlite-drivers.ts [chunks=20] [chunkSize=50] [wakeSamples=200]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../lib/contract/types.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import type { SqliteDriverName } from '../lib/engines/sqlite/binding.js';
import { QueueWorker } from '../lib/worker/queue-worker.js';

const [chunksArg, sizeArg, wakeArg] = process.argv.slice(2);
const CHUNKS = Number(chunksArg ?? 20);
const SIZE = Number(sizeArg ?? 50);
const WAKES = Number(wakeArg ?? 200);

interface Side {
  driver: SqliteDriverName;
  store: Store;
  ms: { enqueue: number; drain: number };
  wakes: number[];
}

async function side(driver: SqliteDriverName, dirs: string[]): Promise<Side> {
  const dir = mkdtempSync(join(tmpdir(), `alk-drivers-${driver.replace(':', '-')}-`));
  dirs.push(dir);
  const store = await openSqliteStore({ path: join(dir, 'store.db'), driver, localHandoff: false });
  return { driver, store, ms: { enqueue: 0, drain: 0 }, wakes: [] };
}

async function chunk(s: Side): Promise<void> {
  const q = s.store.queue('b1');
  let t0 = performance.now();
  for (let i = 0; i < SIZE; i++) await q.enqueue({ i });
  s.ms.enqueue += performance.now() - t0;
  t0 = performance.now();
  for (;;) {
    const jobs = await q.claimBatch(10, 'w');
    if (jobs.length === 0) break;
    await q.ackBatch(jobs);
  }
  s.ms.drain += performance.now() - t0;
}

/** One wake sample: enqueue, then the time until the worker's handler starts. */
async function wakeSample(s: Side, started: Map<number, () => void>, i: number): Promise<void> {
  const seen = new Promise<void>((resolve) => started.set(i, resolve));
  const t0 = performance.now();
  await s.store.queue('b3').enqueue({ i });
  await seen;
  s.wakes.push(performance.now() - t0);
  await new Promise((r) => setTimeout(r, 2));
}

function pct(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

const dirs: string[] = [];
const a = await side('better-sqlite3', dirs);
const b = await side('node:sqlite', dirs);
try {
  for (let c = 0; c < CHUNKS; c++) {
    const order = c % 2 === 0 ? [a, b] : [b, a];
    for (const s of order) await chunk(s);
  }
  const startedA = new Map<number, () => void>();
  const startedB = new Map<number, () => void>();
  const quiet = { log: () => undefined, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m) };
  const worker = (s: Side, started: Map<number, () => void>): QueueWorker =>
    new QueueWorker({
      queue: s.store.queue('b3'),
      name: `b3-${s.driver}`,
      concurrency: 1,
      idlePollIntervalMs: 5_000,
      drainTimeoutMs: 1_000,
      workerId: `b3-${s.driver}`,
      logger: quiet,
      handler: async (job) => started.get((job.payload as { i: number }).i)?.(),
    });
  const workers = [worker(a, startedA), worker(b, startedB)];
  for (const w of workers) w.start();
  await new Promise((r) => setTimeout(r, 200));
  for (let i = 0; i < WAKES; i++) {
    if (i % 2 === 0) {
      await wakeSample(a, startedA, i);
      await wakeSample(b, startedB, i);
    } else {
      await wakeSample(b, startedB, i);
      await wakeSample(a, startedA, i);
    }
  }
  await Promise.all(workers.map((w) => w.stop()));
  const n = CHUNKS * SIZE;
  const rate = (ms: number): number => Math.round((n / ms) * 1000);
  console.log(`Node ${process.version}, ${n} jobs per side, ${WAKES} wake samples, interleaved`);
  console.log('metric                 better-sqlite3   node:sqlite   node:sqlite / better-sqlite3');
  const row = (name: string, x: number, y: number, better: 'higher' | 'lower'): void =>
    console.log(
      `${name.padEnd(22)} ${String(x).padStart(14)} ${String(y).padStart(13)}   ${(y / x).toFixed(3)} (${better} is better)`,
    );
  row('B1 enqueue/s', rate(a.ms.enqueue), rate(b.ms.enqueue), 'higher');
  row('B2 drain/s', rate(a.ms.drain), rate(b.ms.drain), 'higher');
  row('B3 wake p50 ms', Number(pct(a.wakes, 50).toFixed(2)), Number(pct(b.wakes, 50).toFixed(2)), 'lower');
  row('B3 wake p99 ms', Number(pct(a.wakes, 99).toFixed(2)), Number(pct(b.wakes, 99).toFixed(2)), 'lower');
} finally {
  await a.store.close();
  await b.store.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
