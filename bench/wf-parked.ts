/**
 * Workflow steps/s beside parked runs: R runs of 5 plain steps (concurrency 10) on a store with no other
 * run, then the same once P runs are parked in `ctx.waitForSignal` (state running, waiting). Statistics
 * are taken (ANALYZE) between the two, while no run is running, as autovacuum may take them; that is
 * when PostgreSQL rated the by-state index as cheap as the primary key for a lookup by id, so every end
 * read the entry of every parked run. Prints both rates and their ratio, per engine.
 *
 *   npx tsx bench/wf-parked.ts [engine=postgres|sqlite] [parked=10000] [runs=1000] [rounds=3]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import { createWorkflows, defineWorkflow } from '../lib/workflows/index.js';
import { workflowSqlOf } from '../lib/workflows/sql-seam.js';
import { median, PG_URL } from './lib/util.js';

const [engineArg, parkedArg, runsArg, roundsArg] = process.argv.slice(2);
const ENGINE = engineArg === 'sqlite' ? 'sqlite' : 'postgres';
const PARKED = Number(parkedArg ?? 10_000);
const RUNS = Number(runsArg ?? 1000);
const ROUNDS = Number(roundsArg ?? 3);
const silent = { log: () => undefined, warn: () => undefined, error: (m: string, e?: unknown) => console.error(m, e) };

const dir = ENGINE === 'sqlite' ? mkdtempSync(join(tmpdir(), 'wf-parked-')) : null;
const schema = `wfparked_${process.pid}`;
const store =
  dir !== null
    ? await openSqliteStore({ path: join(dir, 'store.db'), logger: silent })
    : await openPostgresStore({ connectionString: PG_URL, schema, logger: silent });
const sql = workflowSqlOf(store as object)!;

let completed = 0;
const steps = defineWorkflow('steps', {
  async run(_input: null, ctx) {
    for (let s = 0; s < 5; s++) await ctx.step(`s${s}`, () => s);
    completed += 1;
    return null;
  },
});
const parked = defineWorkflow('parked', {
  async run(_input: null, ctx) {
    await ctx.waitForSignal('never');
    return null;
  },
});
const w = createWorkflows(store, { workflows: [steps, parked], namespace: 'p', concurrency: 10, logger: silent });

async function until(check: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = performance.now() + 600_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Median steps/s of `ROUNDS` bursts of `RUNS` runs. */
async function rate(): Promise<number> {
  const out: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const before = completed;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: RUNS }, () => w.start(steps, null)));
    await until(() => completed - before >= RUNS, 'the runs');
    out.push((RUNS * 5) / ((performance.now() - t0) / 1000));
  }
  return median(out);
}

const waiting = async (): Promise<number> =>
  Number(
    (await sql.query(`SELECT count(*) AS n FROM ${sql.prefix}workflow_runs WHERE waiting IS NOT NULL`, [], false))[0]!
      .n,
  );

const running = async (): Promise<number> =>
  Number(
    (await sql.query(`SELECT count(*) AS n FROM ${sql.prefix}workflow_runs WHERE state = 'running'`, [], false))[0]!.n,
  );

const alone = await rate();
// Statistics while no run is running (a run counts itself completed just before its end commits).
await until(async () => (await running()) === 0, 'the runs to end');
await sql.query(ENGINE === 'postgres' ? `ANALYZE ${sql.prefix}workflow_runs` : 'ANALYZE', [], true);
for (let i = 0; i < PARKED; i += 500)
  await Promise.all(Array.from({ length: Math.min(500, PARKED - i) }, () => w.start(parked, null)));
await until(async () => (await waiting()) >= PARKED, 'the parked runs');
const beside = await rate();
console.log(
  `${ENGINE}: ${Math.round(alone)} steps/s alone, ${Math.round(beside)} steps/s beside ${PARKED} parked runs (${(beside / alone).toFixed(2)}x); ${RUNS} runs x 5 steps, median of ${ROUNDS}`,
);
await w.close();
if (dir === null) await sql.query(`DROP SCHEMA "${schema}" CASCADE`, [], true);
await store.close();
if (dir !== null) rmSync(dir, { recursive: true, force: true });
