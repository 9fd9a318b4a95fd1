/**
 * FLEET (PostgreSQL): drain rate of 1, 2 and 4 worker processes (the
 * library's queue worker, concurrency 10, prefetch 10, each) on one queue
 * while one producer process enqueues the jobs (batches of 100), timed from
 * the start signal until every job is acked. The ceiling is the database's
 * commit rate with ten clients inserting one row per commit.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openStore } from '../../lib/index.js';
import { dropSchema } from '../lib/pg.js';
import { now, PG_URL, sleep, uniqueId } from '../lib/util.js';
import type { Metrics } from '../workloads.js';

const here = dirname(fileURLToPath(import.meta.url));

interface Kid {
  proc: ChildProcess;
  out: () => string;
  exited: Promise<void>;
}

function child(args: string[]): Kid {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(process.execPath, ['--import', 'tsx', join(here, 'fleet-child.ts'), ...args], {
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  return { proc, out: () => out, exited: new Promise((resolve) => proc.on('exit', () => resolve())) };
}

/** Rows per second committed by ten clients, one autocommit INSERT each, for `ms`. */
export async function insertCeiling(ms: number): Promise<number> {
  const table = uniqueId('bench_ceiling');
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(
    `CREATE TABLE ${table} (id bigserial PRIMARY KEY, queue text NOT NULL, payload json NOT NULL, run_at bigint NOT NULL)`,
  );
  const clients = await Promise.all(
    Array.from({ length: 10 }, async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      return c;
    }),
  );
  let n = 0;
  const t0 = now();
  const end = Date.now() + ms;
  await Promise.all(
    clients.map(async (c) => {
      while (Date.now() < end) {
        await c.query({
          name: 'ins',
          text: `INSERT INTO ${table} (queue, payload, run_at) VALUES ($1, $2, $3)`,
          values: ['q', '{"i":1}', Date.now()],
        });
        n++;
      }
    }),
  );
  const rate = (n * 1000) / (now() - t0);
  await Promise.all(clients.map((c) => c.end()));
  await admin.query(`DROP TABLE ${table}`);
  await admin.end();
  return rate;
}

async function once(processes: number, jobs: number, log: (m: string) => void): Promise<number> {
  const schema = uniqueId('bench_fleet');
  await (await openStore({ url: PG_URL, schema })).close(); // migrate once, before the children open
  const kids = [
    child(['producer', schema, String(jobs)]),
    ...Array.from({ length: processes }, () => child(['worker', schema])),
  ];
  const store = await openStore({ url: PG_URL, schema });
  try {
    const deadline = Date.now() + 60_000;
    while (!kids.every((k) => k.out().includes('ready')) && Date.now() < deadline) await sleep(20);
    if (!kids.every((k) => k.out().includes('ready'))) throw new Error('FLEET: children did not start');
    const t0 = now();
    for (const k of kids) k.proc.stdin!.write('go\n');
    const q = store.queue('fleet');
    const end = Date.now() + 300_000;
    for (;;) {
      const st = await q.stats();
      if (kids[0]!.out().includes('produced') && st.pending + st.processing === 0) break;
      if (Date.now() > end) throw new Error('FLEET: drain did not finish in 300 s');
      await sleep(10);
    }
    const rate = (jobs * 1000) / (now() - t0);
    log(`FLEET ${processes} worker process(es): ${rate.toFixed(0)} jobs/s over ${jobs} jobs`);
    return rate;
  } finally {
    for (const k of kids) k.proc.stdin!.write('stop\n');
    await Promise.race([Promise.all(kids.map((k) => k.exited)), sleep(20_000)]);
    for (const k of kids) k.proc.kill('SIGKILL');
    await store.close();
    await dropSchema(schema);
  }
}

export async function fleetWorkload(scale: number, rounds: number, log: (m: string) => void): Promise<Metrics> {
  const jobs = Math.max(2000, Math.round(20_000 * scale));
  const rates: Record<number, number[]> = { 1: [], 2: [], 4: [] };
  const ceiling: number[] = [];
  for (let r = 0; r < rounds; r++) {
    ceiling.push(await insertCeiling(3000));
    log(`FLEET ceiling (10 clients, one-row commits): ${ceiling[ceiling.length - 1]!.toFixed(0)}/s`);
    for (const p of r % 2 === 0 ? [1, 2, 4] : [4, 2, 1]) rates[p]!.push(await once(p, jobs, log));
  }
  const med = (v: number[]): number => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const out: Metrics = {};
  for (const p of [1, 2, 4]) out[`FLEET.postgres.drain_per_s@${p}proc`] = med(rates[p]!);
  out['FLEET.postgres.ceiling_insert_10clients_per_s'] = med(ceiling);
  out['FLEET.postgres.drain_4proc_over_1proc'] =
    out['FLEET.postgres.drain_per_s@4proc']! / out['FLEET.postgres.drain_per_s@1proc']!;
  out['FLEET.postgres.drain_4proc_over_ceiling'] =
    out['FLEET.postgres.drain_per_s@4proc']! / out['FLEET.postgres.ceiling_insert_10clients_per_s']!;
  return out;
}
