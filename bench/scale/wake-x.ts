/**
 * B3x: cross-process wake. The producer (this process, its own store) and the
 * worker (a child process with the library's queue worker, concurrency 10) are
 * different processes, so no local hand-off can apply: an enqueue commits, the
 * engine's wake crosses to the child, the child claims. Timed from just before
 * the enqueue call to the child's handler start (the child reports its
 * `epochNow()`, so the stdout hop back is not counted). On PostgreSQL the same
 * child also LISTENs on a bare channel and the run measures a bare
 * `pg_notify` round trip the same way, interleaved sample by sample, and a
 * durable one: a one-row INSERT and the `pg_notify` in one autocommit
 * statement, so its commit waits for the WAL flush as an enqueue's does (the
 * bare NOTIFY's commit writes nothing to flush).
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Arrivals, atTime, fromEpoch, now, percentile, randomGap, sleep, withTimeout } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { scaleTarget, type ScaleEngine } from './env.js';

const here = dirname(fileURLToPath(import.meta.url));
/** Samples discarded first (connections, prepared statements). */
const WARMUP = 5;
const SAMPLE_TIMEOUT_MS = 5000;

export async function crossWakeWorkload(
  engine: ScaleEngine,
  samples: number,
  phaseMs: number,
  log: (m: string) => void,
): Promise<Metrics> {
  const t = await scaleTarget(engine);
  const store = await t.open(process.env.B3X_HANDOFF === '1' ? { crossProcessHandoff: true } : {}); // migrates before the child opens
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const schema = t.schema === '' ? '-' : t.schema.replace(/"/g, '');
  const proc = spawn(process.execPath, ['--import', 'tsx', join(here, 'wake-x-child.ts'), t.url, schema], {
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const jobs = new Arrivals();
  const notes = new Arrivals();
  const durable = new Arrivals();
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    const [kind, i, at] = line.split(' ');
    if (kind === 'ready') ready();
    else if (kind === 'job') atTime(fromEpoch(Number(at)), () => jobs.mark(Number(i)));
    else if (kind === 'notify' && i?.startsWith('d'))
      atTime(fromEpoch(Number(at)), () => durable.mark(Number(i.slice(1))));
    else if (kind === 'notify') atTime(fromEpoch(Number(at)), () => notes.mark(Number(i)));
  });
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  const notifier = engine === 'postgres' ? new pg.Client({ connectionString: t.url }) : null;
  try {
    await withTimeout('B3x child ready', 60_000, isReady);
    await notifier?.connect();
    if (notifier)
      await notifier.query(
        `CREATE TABLE IF NOT EXISTS ${t.schema}.b3x_ref (id bigserial PRIMARY KEY, payload jsonb NOT NULL)`,
      );
    const q = store.queue('b3x');
    const wake: number[] = [];
    const bare: number[] = [];
    const flushed: number[] = [];
    let timeouts = 0;
    const deadline = now() + phaseMs;
    await sleep(300);
    for (let i = 0; i < samples + WARMUP && now() < deadline; i++) {
      await sleep(randomGap());
      let t0 = now();
      await q.enqueue({ i, kind: 'bench' });
      const t1 = await jobs.wait(i, SAMPLE_TIMEOUT_MS);
      if (i >= WARMUP) {
        if (t1 === null) timeouts++;
        else wake.push(t1 - t0);
      }
      if (notifier) {
        await sleep(randomGap());
        t0 = now();
        await notifier.query(`SELECT pg_notify('bench_b3x', $1)`, [String(i)]);
        const n1 = await notes.wait(i, SAMPLE_TIMEOUT_MS);
        if (i >= WARMUP && n1 !== null) bare.push(n1 - t0);
        await sleep(randomGap());
        t0 = now();
        await notifier.query({
          name: 'b3x_durable',
          text: `WITH r AS (INSERT INTO ${t.schema}.b3x_ref (payload) VALUES ($1) RETURNING 1) SELECT pg_notify('bench_b3x', $2) FROM r`,
          values: [JSON.stringify({ i }), `d${i}`],
        });
        const d1 = await durable.wait(i, SAMPLE_TIMEOUT_MS);
        if (i >= WARMUP && d1 !== null) flushed.push(d1 - t0);
      }
    }
    log(
      `B3x ${engine}: ${wake.length} samples, p50 ${percentile(wake, 50).toFixed(2)} ms, p99 ${percentile(wake, 99).toFixed(2)} ms${notifier ? `; bare NOTIFY p50 ${percentile(bare, 50).toFixed(2)} ms, INSERT + NOTIFY p50 ${percentile(flushed, 50).toFixed(2)} ms` : ''}`,
    );
    const m: Metrics = {
      [`B3x.${engine}.wake_p50_ms`]: percentile(wake, 50),
      [`B3x.${engine}.wake_p99_ms`]: percentile(wake, 99),
      [`B3x.${engine}.wake_samples`]: wake.length,
      ...(timeouts > 0 ? { [`B3x.${engine}.wake_timeouts`]: timeouts } : {}),
    };
    if (notifier) {
      m[`B3x.${engine}.notify_p50_ms`] = percentile(bare, 50);
      m[`B3x.${engine}.notify_p99_ms`] = percentile(bare, 99);
      m[`B3x.${engine}.wake_over_notify_p50`] = percentile(wake, 50) / percentile(bare, 50);
      m[`B3x.${engine}.wake_over_notify_p99`] = percentile(wake, 99) / percentile(bare, 99);
      m[`B3x.${engine}.durable_notify_p50_ms`] = percentile(flushed, 50);
      m[`B3x.${engine}.durable_notify_p99_ms`] = percentile(flushed, 99);
      m[`B3x.${engine}.wake_over_durable_notify_p50`] = percentile(wake, 50) / percentile(flushed, 50);
      m[`B3x.${engine}.wake_over_durable_notify_p99`] = percentile(wake, 99) / percentile(flushed, 99);
    }
    return m;
  } finally {
    proc.stdin!.end();
    await withTimeout('B3x child exit', 20_000, exited).catch(() => proc.kill('SIGKILL'));
    await notifier?.end().catch(() => undefined);
    await store.close();
    await t.cleanup();
  }
}
