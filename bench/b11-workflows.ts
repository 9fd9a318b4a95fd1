/**
 * B11: durable workflows beside the plain queue, one run per engine (SQLite file, PostgreSQL schema).
 *
 * - throughput: R runs of 5 plain steps each through `createWorkflows` (concurrency 10), from the first
 *   start to the last completion, as steps/s; beside it, 5R plain jobs drained by a QueueWorker
 *   (concurrency 10) as jobs/s (a job is the plain queue's unit of work, a step the workflow's);
 * - latency: S sequential samples of start (one transaction) to the first step's function starting,
 *   beside enqueue to handler start of a plain job, p50 and p95.
 *
 *   npx -y tsx bench/b11-workflows.ts [runs=200] [samples=100]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../lib/contract/types.js';
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import { QueueWorker } from '../lib/worker/queue-worker.js';
import { createWorkflows, defineWorkflow } from '../lib/workflows/index.js';

const [runsArg, samplesArg] = process.argv.slice(2);
const RUNS = Number(runsArg ?? 200);
const SAMPLES = Number(samplesArg ?? 100);
const STEPS = 5;
const CONCURRENCY = 10;
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const silent = { log: () => undefined, warn: () => undefined, error: (m: string, e?: unknown) => console.error(m, e) };

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 600_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function plainQueue(store: Store): Promise<{ jobsPerS: number; p50: number; p95: number }> {
  const q = store.queue('b11-plain');
  let done = 0;
  let started: (() => void) | null = null;
  const worker = new QueueWorker({
    queue: q,
    name: 'b11-plain',
    concurrency: CONCURRENCY,
    idlePollIntervalMs: 1000,
    drainTimeoutMs: 5000,
    workerId: 'b11-plain',
    logger: silent,
    handler: async () => {
      started?.();
      done += 1;
    },
  });
  const latencies: number[] = [];
  worker.start();
  for (let i = 0; i < SAMPLES; i++) {
    const seen = new Promise<void>((r) => (started = r));
    const t0 = performance.now();
    await q.enqueue({ i });
    await seen;
    latencies.push(performance.now() - t0);
  }
  started = null;
  const total = RUNS * STEPS;
  const before = done;
  const t0 = performance.now();
  for (let i = 0; i < total; i += 500)
    await q.enqueueMany(Array.from({ length: Math.min(500, total - i) }, (_, k) => ({ k: i + k })));
  await until(() => done - before >= total, 'the plain drain');
  const elapsed = performance.now() - t0;
  await worker.stop();
  return { jobsPerS: total / (elapsed / 1000), p50: pct(latencies, 50), p95: pct(latencies, 95) };
}

async function workflows(store: Store): Promise<{ stepsPerS: number; p50: number; p95: number }> {
  let firstStep: (() => void) | null = null;
  let completed = 0;
  const wf = defineWorkflow('b11', {
    async run(_input: null, ctx) {
      await ctx.step('s0', () => firstStep?.());
      for (let s = 1; s < STEPS; s++) await ctx.step(`s${s}`, () => s);
      completed += 1;
      return null;
    },
  });
  const w = createWorkflows(store, { workflows: [wf], namespace: 'b11', concurrency: CONCURRENCY, logger: silent });
  const latencies: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const seen = new Promise<void>((r) => (firstStep = r));
    const t0 = performance.now();
    await w.start(wf, null);
    await seen;
    latencies.push(performance.now() - t0);
  }
  firstStep = null;
  await until(() => completed >= SAMPLES, 'the latency runs');
  const before = completed;
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) await w.start(wf, null);
  await until(() => completed - before >= RUNS, 'the workflow runs');
  const elapsed = performance.now() - t0;
  await w.close();
  return { stepsPerS: (RUNS * STEPS) / (elapsed / 1000), p50: pct(latencies, 50), p95: pct(latencies, 95) };
}

async function engine(name: string, open: () => Promise<Store>, cleanup: () => Promise<void>): Promise<void> {
  const store = await open();
  try {
    const plain = await plainQueue(store);
    const flows = await workflows(store);
    console.log(
      `B11 ${name}: workflows ${flows.stepsPerS.toFixed(0)} steps/s (${RUNS} runs x ${STEPS} steps), plain queue ${plain.jobsPerS.toFixed(0)} jobs/s; ` +
        `start -> first step p50 ${flows.p50.toFixed(1)} ms p95 ${flows.p95.toFixed(1)} ms, enqueue -> handler p50 ${plain.p50.toFixed(1)} ms p95 ${plain.p95.toFixed(1)} ms (${SAMPLES} samples)`,
    );
  } finally {
    await store.close();
    await cleanup();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'alk-b11-'));
await engine(
  'sqlite',
  () => openSqliteStore({ path: join(dir, 'store.db'), logger: silent }),
  async () => rmSync(dir, { recursive: true, force: true }),
);
const schema = `b11_${process.pid}`;
const pg = (await import('pg')).default;
const admin = new pg.Client({ connectionString: PG_URL });
try {
  await admin.connect();
} catch {
  console.log('B11 postgres: not reachable, skipped');
  process.exit(0);
}
await engine(
  'postgres',
  () => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 10, logger: silent }),
  async () => {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  },
);
