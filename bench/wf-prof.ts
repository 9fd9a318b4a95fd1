/**
 * A look inside B11's workflow numbers (not a benchmark): runs of 5 plain steps on one engine, the mean
 * time between each run's milestones (start commit, first step, each step, result seen), and the store
 * calls per run with their mean duration (withTx, readSince, claimBatch, ackBatch). `seq` waits for
 * each run before starting the next; `conc` starts them all (one after another, as B11 does) and then
 * waits; `burst` starts them all at once and counts completions. PLAIN=n first drains n plain jobs through a QueueWorker on the same store, as B11 does,
 * and prints that drain's rate and CPU per job. Beside this process's CPU per step it prints the whole
 * machine's busy time per step (/proc/stat) and the difference: the database server's share (PostgreSQL), or
 * anything else running.
 *
 *   npx tsx bench/wf-prof.ts [engine=sqlite|postgres] [runs=20] [mode=seq|conc|burst]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '../lib/contract/types.js';
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import { openSqliteStore } from '../lib/engines/sqlite/index.js';
import { createWorkflows, defineWorkflow } from '../lib/workflows/index.js';
import { machineBusyMs } from './lib/cpu.js';

const [engineArg, runsArg, modeArg] = process.argv.slice(2);
const ENGINE = engineArg ?? 'sqlite';
const RUNS = Number(runsArg ?? 20);
const MODE = modeArg ?? 'seq';
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const silent = { log: () => undefined, warn: () => undefined, error: (m: string, e?: unknown) => console.error(m, e) };

const marks = new Map<string, number[]>();
let finished = 0;
function mark(id: string): void {
  const l = marks.get(id) ?? [];
  l.push(performance.now());
  marks.set(id, l);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'alk-wfprof-'));
  const schema = `wfprof_${process.pid}`;
  const store: Store =
    ENGINE === 'sqlite'
      ? await openSqliteStore({ path: join(dir, 'store.db'), logger: silent })
      : await openPostgresStore({ connectionString: PG_URL, schema, poolSize: 10, logger: silent });
  const calls = new Map<string, number>();
  const count = (k: string): void => void calls.set(k, (calls.get(k) ?? 0) + 1);
  const s = store as unknown as Record<string, unknown>;
  const spent = new Map<string, number>();
  const timed = <T>(k: string, p: Promise<T>): Promise<T> => {
    const t = performance.now();
    count(k);
    return p.finally(() => spent.set(k, (spent.get(k) ?? 0) + performance.now() - t));
  };
  for (const k of ['withTx', 'now', 'listen', 'joinTransaction']) {
    const f = s[k] as ((...a: unknown[]) => unknown) | undefined;
    if (typeof f === 'function')
      s[k] = (...a: unknown[]) => {
        const r = f.apply(store, a);
        return r instanceof Promise ? timed(k, r) : (count(k), r);
      };
  }
  const streamOf = store.stream.bind(store);
  s.stream = (name: string) => {
    const h = streamOf(name);
    const rs = h.readSince.bind(h);
    return Object.assign(Object.create(h), { readSince: (o: number, n: number) => timed('readSince', rs(o, n)) });
  };
  const queueOf = store.queue.bind(store);
  s.queue = (name: string, o?: unknown) => {
    const q = queueOf(name, o as never) as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    for (const k of ['claimBatch', 'ackBatch']) {
      const f = q[k]!.bind(q);
      q[k] = (...a: unknown[]) => timed(k, f(...a));
    }
    return q as never;
  };
  const wf = defineWorkflow('prof', {
    async run(_input: null, ctx) {
      for (let i = 0; i < 5; i++) await ctx.step(`s${i}`, () => mark(ctx.runId));
      finished += 1;
      return null;
    },
  });
  if (process.env.PLAIN) {
    const { QueueWorker } = await import('../lib/worker/queue-worker.js');
    const q = store.queue('plain');
    let n = 0;
    const qw = new QueueWorker({
      queue: q,
      name: 'plain',
      concurrency: 10,
      idlePollIntervalMs: 1000,
      drainTimeoutMs: 5000,
      workerId: 'p',
      logger: silent,
      handler: async () => void (n += 1),
    });
    qw.start();
    await q.enqueueMany(Array.from({ length: Number(process.env.PLAIN) }, (_, i) => i));
    const [pc0, pb0, pt0] = [process.cpuUsage(), machineBusyMs() * 1000, performance.now()];
    while (n < Number(process.env.PLAIN)) await new Promise((r) => setTimeout(r, 5));
    const [pc, pb, pn] = [process.cpuUsage(pc0), machineBusyMs() * 1000 - pb0, Number(process.env.PLAIN)];
    console.log(
      `plain: ${(pn / ((performance.now() - pt0) / 1000)).toFixed(0)} jobs/s, machine busy ${(pb / pn).toFixed(0)} µs ` +
        `per job, this process ${((pc.user + pc.system) / pn).toFixed(0)}`,
    );
    await qw.stop();
  }
  const w = createWorkflows(store, { workflows: [wf], namespace: 'prof', concurrency: 10, logger: silent });
  await w.ready();
  await new Promise((r) => setTimeout(r, 300));
  calls.clear();
  const busy0 = machineBusyMs() * 1000;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const ends: Promise<unknown>[] = [];
  if (MODE === 'burst') {
    // All runs started at once (as B11 does), completion seen by a counter, not by waitForResult.
    await Promise.all(
      Array.from({ length: RUNS }, (_, i) => {
        mark(`r${i}`);
        return w.start(wf, null, { id: `r${i}` }).then(() => mark(`r${i}`));
      }),
    );
    while (finished < RUNS) await new Promise((r) => setTimeout(r, 2));
    for (let i = 0; i < RUNS; i++) mark(`r${i}`);
  }
  for (let i = 0; i < (MODE === 'burst' ? 0 : RUNS); i++) {
    const id = `r${i}`;
    mark(id);
    await w.start(wf, null, { id });
    mark(id);
    if (MODE === 'seq') {
      await w.waitForResult(id, { pollMs: 5 });
      mark(id);
    } else ends.push(w.waitForResult(id, { pollMs: 50 }).then(() => mark(id)));
  }
  await Promise.all(ends);
  const elapsed = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const steps = RUNS * 5;
  const busy = machineBusyMs() * 1000 - busy0;
  console.log(
    `machine busy ${(busy / steps).toFixed(0)} µs per step: this process ${((cpu.user + cpu.system) / steps).toFixed(0)} ` +
      `(user ${(cpu.user / steps).toFixed(0)}), the rest ${((busy - cpu.user - cpu.system) / steps).toFixed(0)}`,
  );
  console.log(
    `process CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms over ${elapsed.toFixed(0)} ms wall, ${((cpu.user + cpu.system) / (RUNS * 5)).toFixed(0)} µs per step`,
  );
  const gaps: number[][] = [];
  for (const l of marks.values()) gaps.push(l.slice(1).map((t, i) => t - l[i]!));
  const avg = gaps[0]!.map((_, i) => gaps.reduce((a, g) => a + (g[i] ?? 0), 0) / gaps.length);
  console.log(
    `${ENGINE} ${MODE}: ${RUNS} runs in ${elapsed.toFixed(0)} ms (${((RUNS * 5) / (elapsed / 1000)).toFixed(0)} steps/s)`,
  );
  console.log(`gaps (ms): start commit, start->s0, s0->s1.., s4->result: ${avg.map((x) => x.toFixed(2)).join(' ')}`);
  console.log('store calls per run:', [...calls].map(([k, n]) => `${k}=${(n / RUNS).toFixed(1)}`).join(' '));
  console.log('ms per call:', [...spent].map(([k, t]) => `${k}=${(t / calls.get(k)!).toFixed(2)}`).join(' '));
  await w.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  if (ENGINE !== 'sqlite') {
    const pg = (await import('pg')).default;
    const admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}
await main();
