/**
 * In-process A/B of B11's workflow phase (bench/b11-workflows.ts) between two checkouts of alkstore: 100
 * sequential starts (B11's latency samples), then a burst of R runs of 5 plain steps (concurrency 10), as
 * steps/s. Each round opens a fresh store (SQLite file or PostgreSQL schema) with one side's code, the
 * sides alternating A B B A …, so the machine's drift falls on both; prints each round and the medians.
 *
 *   npx tsx bench/wf-ab.ts <dir A> <dir B> [runs=1000] [rounds=8] [engine=sqlite|postgres]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import type { Store } from '../lib/contract/types.js';
import type * as WorkflowsApi from '../lib/workflows/index.js';

const [aDir, bDir, runsArg, roundsArg, engineArg] = process.argv.slice(2);
if (!aDir || !bDir) throw new Error('usage: npx tsx bench/wf-ab.ts <dir A> <dir B> [runs] [rounds] [engine]');
const RUNS = Number(runsArg ?? 1000);
const ROUNDS = Number(roundsArg ?? 8);
const ENGINE = engineArg ?? 'sqlite';
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const silent = { log: () => undefined, warn: () => undefined, error: (m: string, e?: unknown) => console.error(m, e) };
const libs: Record<'A' | 'B', string> = { A: resolve(aDir, 'lib'), B: resolve(bDir, 'lib') };

async function until(check: () => boolean): Promise<void> {
  const deadline = performance.now() + 600_000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('timed out waiting for the runs');
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function round(side: 'A' | 'B', n: number): Promise<number> {
  const lib = libs[side];
  const { openSqliteStore } = (await import(`${lib}/engines/sqlite/index.ts`)) as {
    openSqliteStore: (o: object) => Promise<Store>;
  };
  const { openPostgresStore } = (await import(`${lib}/engines/postgres/index.ts`)) as {
    openPostgresStore: (o: object) => Promise<Store>;
  };
  const { createWorkflows, defineWorkflow } = (await import(`${lib}/workflows/index.ts`)) as typeof WorkflowsApi;
  const dir = mkdtempSync(join(tmpdir(), 'alk-wfab-'));
  const schema = `wfab_${process.pid}_${side}_${n}`;
  const store =
    ENGINE === 'sqlite'
      ? await openSqliteStore({ path: join(dir, 'store.db'), logger: silent })
      : await openPostgresStore({ connectionString: PG_URL, schema, poolSize: 10, logger: silent });
  let firstStep: (() => void) | null = null;
  let completed = 0;
  const wf = defineWorkflow('b11', {
    async run(_input: null, ctx) {
      await ctx.step('s0', () => firstStep?.());
      for (let s = 1; s < 5; s++) await ctx.step(`s${s}`, () => s);
      completed += 1;
      return null;
    },
  });
  const w = createWorkflows(store, { workflows: [wf], namespace: 'b11', concurrency: 10, logger: silent });
  for (let i = 0; i < 100; i++) {
    const seen = new Promise<void>((r) => (firstStep = r));
    await w.start(wf, null);
    await seen;
  }
  firstStep = null;
  await until(() => completed >= 100);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: RUNS }, () => w.start(wf, null)));
  await until(() => completed >= 100 + RUNS);
  const elapsed = performance.now() - t0;
  await w.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  if (ENGINE !== 'sqlite') {
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  return (RUNS * 5) / (elapsed / 1000);
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rates: Record<'A' | 'B', number[]> = { A: [], B: [] };
for (let r = 0; r < ROUNDS; r++)
  for (const side of r % 2 === 0 ? (['A', 'B'] as const) : (['B', 'A'] as const)) {
    const v = await round(side, r);
    rates[side].push(v);
    console.log(`round ${r} ${side}: ${v.toFixed(0)} steps/s`);
  }
const [a, b] = [median(rates.A), median(rates.B)];
console.log(`${ENGINE}: median A ${a.toFixed(0)}, B ${b.toFixed(0)} steps/s; B/A ${(b / a).toFixed(3)}`);
