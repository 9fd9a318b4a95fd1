/**
 * Single PostgreSQL enqueues, interleaved in one process: another checkout's library (A), this one (B),
 * with `crossProcessHandoff: true`, and this one with it off (C, the default: no offer probe). Each variant has its own fresh
 * schema, no worker (so no offer exists: the cost measured is the probe of `idle_takers` on the plain
 * path). Each round runs every variant for a chunk of sequential `queue.enqueue` calls, in rotating
 * order; the figures are the medians over rounds of the per-round ratios to A.
 *
 *   npx tsx bench/ab-enq-pg.ts --a <checkout> [--chunk 200] [--rounds 20] [--url postgres://…]
 */
import { join, resolve } from 'node:path';
import pg from 'pg';
import * as mine from '../lib/index.js';

function arg(name: string, dflt?: string): string {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? process.argv[i + 1] : dflt;
  if (v === undefined) throw new Error(`missing ${name}`);
  return v;
}

const base = (await import(join(resolve(arg('--a')), 'lib/index.ts'))) as typeof mine;
const url = arg('--url', 'postgres://postgres@127.0.0.1:5432/test');
const chunk = Number(arg('--chunk', '200'));
const rounds = Number(arg('--rounds', '20'));
const tag = `abenq_${process.pid}`;
const schemas = ['a', 'b', 'c'].map((k) => `${tag}_${k}`);
const stores = [
  await base.openStore({ url, schema: schemas[0]! }),
  await mine.openStore({ url, schema: schemas[1]!, crossProcessHandoff: true } as Parameters<typeof mine.openStore>[0]),
  await mine.openStore({ url, schema: schemas[2]!, crossProcessHandoff: false } as Parameters<
    typeof mine.openStore
  >[0]),
];
const names = ['A (base)', 'B (this, crossProcessHandoff: true)', 'C (this, crossProcessHandoff: false)'];
const queues = stores.map((s) => s.queue('enq'));
const ratios: number[][] = [[], [], []];
const perOp: number[][] = [[], [], []];
let n = 0;
async function run(k: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < chunk; i++) await queues[k]!.enqueue({ i: n++, pad: 'x'.repeat(64) });
  return performance.now() - t0;
}
for (let k = 0; k < 3; k++) await run(k); // warm-up
for (let r = 0; r < rounds; r++) {
  const t = [0, 0, 0];
  for (let j = 0; j < 3; j++) {
    const k = (r + j) % 3;
    t[k] = await run(k);
  }
  for (let k = 0; k < 3; k++) {
    ratios[k]!.push(t[k]! / t[0]!);
    perOp[k]!.push(t[k]! / chunk);
  }
}
const med = (xs: number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
for (let k = 0; k < 3; k++)
  console.log(
    `${names[k]}: ${med(perOp[k]!).toFixed(3)} ms/enqueue (median of ${rounds} chunks of ${chunk}), time ÷ A ${med(ratios[k]!).toFixed(3)}`,
  );
for (const s of stores) await s.close();
const c = new pg.Client({ connectionString: url });
await c.connect();
for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
await c.end();
