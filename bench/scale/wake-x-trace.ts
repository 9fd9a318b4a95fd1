/**
 * Where the time of a B3x cross-process wake goes, per segment (medians and p99 over samples):
 * the enqueue call (its commit), the wake's arrival in the worker's process, the worker's claim
 * (sent to returned), and the handler start. Same child as B3x (wake-x-child.ts, with
 * `B3X_TRACE=1`); timestamps are epoch ms of one host.
 *
 *   npx tsx bench/scale/wake-x-trace.ts [postgres|sqlite] [samples=150]
 *
 * `B3X_CLAIM_DURABILITY=deferred` runs the worker with claims that do not wait for their WAL flush.
 * `B3X_HANDOFF=1` opens both stores with `crossProcessHandoff: true`: a sample the worker took by hand-off
 * (no claim) is split into the enqueue call, t0 to the `x:` notification's arrival (a bare LISTEN in the
 * child) and that arrival to the handler start; the samples that took the claim path are counted apart.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { epochNow, percentile, randomGap, sleep, withTimeout } from '../lib/util.js';
import { scaleTarget, type ScaleEngine } from './env.js';

const here = dirname(fileURLToPath(import.meta.url));
const engine = (process.argv[2] ?? 'postgres') as ScaleEngine;
const SAMPLES = Number(process.argv[3] ?? 150);
const WARMUP = 5;

const t = await scaleTarget(engine);
const store = await t.open(process.env.B3X_HANDOFF === '1' ? { crossProcessHandoff: true } : {});
const env: NodeJS.ProcessEnv = { ...process.env, B3X_TRACE: '1' };
delete env.NODE_OPTIONS;
const schema = t.schema === '' ? '-' : t.schema.replace(/"/g, '');
const proc = spawn(process.execPath, ['--import', 'tsx', join(here, 'wake-x-child.ts'), t.url, schema], {
  env,
  stdio: ['pipe', 'pipe', 'inherit'],
});
const wakes: number[] = [];
const handoffs: number[] = [];
const claims: { start: number; end: number; n: number }[] = [];
const jobs = new Map<number, number>();
let ready!: () => void;
const isReady = new Promise<void>((resolve) => (ready = resolve));
createInterface({ input: proc.stdout! }).on('line', (line) => {
  const [kind, a, b, c] = line.split(' ');
  if (kind === 'ready') ready();
  else if (kind === 'wake') wakes.push(Number(a));
  else if (kind === 'handoff') handoffs.push(Number(a));
  else if (kind === 'claim') claims.push({ start: Number(a), end: Number(b), n: Number(c) });
  else if (kind === 'job') jobs.set(Number(a), Number(b));
});
const seg: Record<'enqueue' | 'toWake' | 'wakeToClaim' | 'claim' | 'toHandler' | 'total', number[]> = {
  enqueue: [],
  toWake: [],
  wakeToClaim: [],
  claim: [],
  toHandler: [],
  total: [],
};
const hseg: Record<'enqueue' | 'toNotified' | 'toHandler' | 'total', number[]> = {
  enqueue: [],
  toNotified: [],
  toHandler: [],
  total: [],
};
try {
  await withTimeout('trace child ready', 60_000, isReady);
  await sleep(300);
  const q = store.queue('b3x');
  for (let i = 0; i < SAMPLES + WARMUP; i++) {
    await sleep(randomGap());
    const w0 = wakes.length;
    const h0 = handoffs.length;
    const c0 = claims.length;
    const t0 = epochNow();
    await q.enqueue({ i, kind: 'bench' });
    const t1 = epochNow();
    const deadline = Date.now() + 5000;
    while (!jobs.has(i) && Date.now() < deadline) await sleep(1);
    const th = jobs.get(i);
    const wake = wakes.slice(w0).find((x) => x >= t0);
    const claim = claims.slice(c0).find((x) => x.n > 0);
    const handed = handoffs.slice(h0).find((x) => x >= t0);
    if (i >= WARMUP && th !== undefined && claim === undefined && handed !== undefined) {
      hseg.enqueue.push(t1 - t0);
      hseg.toNotified.push(handed - t0);
      hseg.toHandler.push(th - handed);
      hseg.total.push(th - t0);
      continue;
    }
    if (i < WARMUP || th === undefined || wake === undefined || claim === undefined) continue;
    seg.enqueue.push(t1 - t0);
    seg.toWake.push(wake - t0);
    seg.wakeToClaim.push(claim.start - wake);
    seg.claim.push(claim.end - claim.start);
    seg.toHandler.push(th - claim.end);
    seg.total.push(th - t0);
  }
  process.stdout.write(
    `B3x trace ${engine} (claims ${process.env.B3X_CLAIM_DURABILITY ?? 'durable'}), ${seg.total.length} samples, ms\n`,
  );
  for (const [k, xs] of Object.entries(seg))
    process.stdout.write(
      `  ${k.padEnd(12)} p50 ${percentile(xs, 50).toFixed(2).padStart(7)}  p99 ${percentile(xs, 99).toFixed(2).padStart(7)}\n`,
    );
  if (hseg.total.length > 0) {
    process.stdout.write(`handed off (no claim): ${hseg.total.length} samples, ms\n`);
    for (const [k, xs] of Object.entries(hseg))
      process.stdout.write(
        `  ${k.padEnd(12)} p50 ${percentile(xs, 50).toFixed(2).padStart(7)}  p99 ${percentile(xs, 99).toFixed(2).padStart(7)}\n`,
      );
  }
} finally {
  proc.stdin!.end();
  await withTimeout('trace child exit', 20_000, new Promise((r) => proc.on('exit', r))).catch(() =>
    proc.kill('SIGKILL'),
  );
  await store.close();
  await t.cleanup();
}
