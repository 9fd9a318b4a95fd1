/**
 * FAIR (SQLite): while another process writes flat out (back-to-back
 * `withTx` transactions with short awaits inside, fair-writer.ts), this
 * process enqueues one job every 20 ms and times each enqueue: p50 / p99 /
 * max, and how many hit the lock-wait timeout. With the write tickets of
 * `writeFairness` (default) and without them (plain polling), in alternating
 * rounds. Also reports the busy writer's transaction rate in each mode.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { now, percentile, sleep } from '../lib/util.js';
import type { Metrics } from '../workloads.js';

const here = dirname(fileURLToPath(import.meta.url));

async function round(
  fair: boolean,
  seconds: number,
  log: (m: string) => void,
): Promise<{ lat: number[]; failed: number; writerTx: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'alkbench-fair-'));
  const file = join(dir, 'fair.db');
  // Create the file and schema first, so the writer does not race the open.
  await (await openSqliteStore({ path: file })).close();
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(here, 'fair-writer.ts'), file, String(seconds + 5), fair ? 'on' : 'off'],
    { env, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    const deadline = Date.now() + 30_000;
    while (!out.includes('ready') && Date.now() < deadline) await sleep(10);
    if (!out.includes('ready')) throw new Error('FAIR: the busy writer did not start');
    await sleep(500); // let it reach full speed
    const store = await openSqliteStore({ path: file, writeFairness: fair, lockWaitTimeoutMs: 10_000 });
    const lat: number[] = [];
    let failed = 0;
    try {
      const end = Date.now() + seconds * 1000;
      for (let i = 0; Date.now() < end; i++) {
        const t0 = now();
        try {
          await store.queue('probe').enqueue({ i });
          lat.push(now() - t0);
        } catch {
          failed++;
        }
        await sleep(20);
      }
      const st = await store.queue('busy').stats();
      log(
        `FAIR fairness ${fair ? 'on ' : 'off'}: ${lat.length} probes, p50 ${percentile(lat, 50).toFixed(1)} ms, p99 ${percentile(lat, 99).toFixed(1)} ms, max ${Math.max(...lat).toFixed(0)} ms, ${failed} timed out; busy writer committed ${st.pending / 2} transactions so far`,
      );
      child.kill('SIGTERM');
      await exited;
      return { lat, failed, writerTx: st.pending / 2 };
    } finally {
      await store.close();
    }
  } finally {
    child.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function fairWorkload(seconds: number, rounds: number, log: (m: string) => void): Promise<Metrics> {
  const lat: Record<'on' | 'off', number[]> = { on: [], off: [] };
  const failed = { on: 0, off: 0 };
  const tx = { on: 0, off: 0 };
  for (let r = 0; r < rounds; r++) {
    for (const fair of r % 2 === 0 ? [true, false] : [false, true]) {
      const k = fair ? 'on' : 'off';
      const res = await round(fair, seconds, log);
      lat[k].push(...res.lat);
      failed[k] += res.failed;
      tx[k] += res.writerTx;
    }
  }
  const out: Metrics = {};
  for (const k of ['on', 'off'] as const) {
    out[`FAIR.sqlite.fairness_${k}.enqueue_p50_ms`] = percentile(lat[k], 50);
    out[`FAIR.sqlite.fairness_${k}.enqueue_p99_ms`] = percentile(lat[k], 99);
    out[`FAIR.sqlite.fairness_${k}.enqueue_max_ms`] = Math.max(...lat[k]);
    out[`FAIR.sqlite.fairness_${k}.enqueue_samples`] = lat[k].length;
    out[`FAIR.sqlite.fairness_${k}.enqueue_timeouts`] = failed[k];
    out[`FAIR.sqlite.fairness_${k}.busy_writer_tx_per_s`] = tx[k] / (rounds * (seconds + 0.5));
  }
  return out;
}
