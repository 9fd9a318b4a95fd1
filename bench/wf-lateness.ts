/**
 * Sleep lateness under the kill probe's load (issue #43): the order workflow of the multi-process crash
 * test (test/workflows/workflow-processes.test.ts: a step, a transactional step, a durable sleep of
 * 100–500 ms timed with journaled database clock readings, a wait for a signal, a child run, a last
 * step), 200 runs on 3 worker processes (concurrency 4 each), one of them SIGKILLed at random 15 times
 * and replaced, signals sent meanwhile. Prints how late each sleep ended (database clock after the
 * sleep minus before, minus the time asked): p50, p95, p99, max. Not a test: no figure is asserted.
 *
 *   npx tsx bench/wf-lateness.ts [sqlite|postgres] [runs=200] [workers=3] [kills=15]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Store } from '../lib/contract/types.js';
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import { createWorkflows } from '../lib/workflows/index.js';
import { NAMESPACE, orderWorkflow, packWorkflow, type OrderResult } from '../test/workflows/fixtures/order-workflow.js';

const [engineArg, runsArg, workersArg, killsArg] = process.argv.slice(2);
const ENGINE = engineArg === 'postgres' ? 'postgres' : 'sqlite';
const RUNS = Number(runsArg ?? 200);
const WORKERS = Number(workersArg ?? 3);
const KILLS = Number(killsArg ?? 15);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const WORKER = fileURLToPath(new URL('../test/workflows/fixtures/workflow-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

function spawnWorker(location: string): { proc: ChildProcess; ready: Promise<void> } {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', WORKER, ENGINE, location, ENGINE === 'postgres' ? PG_URL : '-'],
    {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"ready":true')) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`worker exited early (${code ?? signal})`)));
  });
  return { proc, ready };
}

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'alk-wflate-'));
  const schema = `wflate_${process.pid}`;
  const location = ENGINE === 'sqlite' ? join(dir, 'store.db') : schema;
  const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };
  const store: Store =
    ENGINE === 'sqlite'
      ? await openSqliteStore({ path: location, logger: silent })
      : await openPostgresStore({ connectionString: PG_URL, schema, logger: silent });
  const workflows = createWorkflows(store, {
    workflows: [orderWorkflow(store), packWorkflow(store)],
    namespace: NAMESPACE,
    worker: false,
    logger: silent,
  });
  const workers = Array.from({ length: WORKERS }, () => spawnWorker(location));
  await Promise.all(workers.map((w) => w.ready));
  const ids: string[] = [];
  const t0 = performance.now();
  try {
    for (let i = 0; i < RUNS; i++)
      ids.push(
        (await workflows.start('order', { sleepMs: 100 + Math.floor(Math.random() * 400) }, { id: `order-${i}` })).id,
      );
    let kills = 0;
    const chaos = (async () => {
      while (kills < KILLS) {
        await new Promise((r) => setTimeout(r, 300 + Math.random() * 900));
        const i = Math.floor(Math.random() * workers.length);
        workers[i]!.proc.kill('SIGKILL');
        kills += 1;
        workers[i] = spawnWorker(location);
        await workers[i]!.ready;
      }
    })();
    for (const id of [...ids].sort(() => Math.random() - 0.5)) {
      await workflows.signal(id, 'approve', { by: 'bench' });
      await new Promise((r) => setTimeout(r, Math.random() * 40));
    }
    await chaos;
    const results = await Promise.all(
      ids.map((id) => workflows.waitForResult<OrderResult>(id, { timeoutMs: 300_000, pollMs: 100 })),
    );
    const late = results.map((r) => r.sleptMs - r.askedMs).sort((a, b) => a - b);
    const early = late.filter((x) => x < 0).length;
    console.log(
      `${ENGINE}: ${RUNS} runs, ${WORKERS} workers, ${KILLS} SIGKILLs, ${((performance.now() - t0) / 1000).toFixed(1)} s; ` +
        `sleep lateness ms p50 ${pct(late, 50)} p95 ${pct(late, 95)} p99 ${pct(late, 99)} max ${late[late.length - 1]}; ` +
        `early ${early}`,
    );
  } finally {
    for (const w of workers) w.proc.kill('SIGKILL');
    await workflows.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    if (ENGINE === 'postgres') {
      const pg = (await import('pg')).default;
      const admin = new pg.Client({ connectionString: PG_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  }
}
await main();
