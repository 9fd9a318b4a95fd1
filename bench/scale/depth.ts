/**
 * DEPTH: claim latency, drain rate, stats() and listDead() at 10k, 100k and
 * 1M ready jobs (times --scale), with 1M dead and 1M delayed rows (times
 * --scale) beside them on the same queue, both engines. `--depth-points
 * 10000,10000000` measures at those depths instead (the rows beside stay at
 * 1M times --scale).
 */
import { median, now, percentile, sleep } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { bulkJobs, label, scalePoints, scaleTarget, type ScaleEngine } from './env.js';
import { startWorker } from './worker.js';

/** Claims timed per depth: the p99 is the 10th slowest (at 200 it was the 2nd). */
const CLAIMS = 1000;
const CALLS = 50;

async function timed(n: number, op: () => Promise<unknown>): Promise<number[]> {
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await op();
    lat.push(now() - t0);
  }
  return lat;
}

export async function depthWorkload(
  engine: ScaleEngine,
  scale: number,
  log: (m: string) => void,
  points: number[] | null = null,
): Promise<Metrics> {
  const t = await scaleTarget(engine);
  const store = await t.open();
  const out: Metrics = {};
  const p = `DEPTH.${engine}.`;
  try {
    const q = store.queue('depth');
    const beside = Math.max(100, Math.round(1_000_000 * scale));
    log(`DEPTH ${engine}: ${label(beside)} dead and ${label(beside)} delayed rows beside`);
    await bulkJobs(t, 'depth', 'dead', beside);
    await bulkJobs(t, 'depth', 'delayed', beside);
    const claimP99: number[] = [];
    const drain: number[] = [];
    for (const size of points ?? scalePoints(scale)) {
      // Drain part of the backlog with the library's worker; the depth stays near `size`.
      const m = Math.max(100, Math.min(Math.floor(size / 2), Math.round(20_000 * scale)));
      // Enough ready rows that every claim below finds the queue at least `size` deep.
      const want = size + 10 + CLAIMS + m;
      const st0 = await q.stats();
      const ready = st0.pending - st0.scheduled;
      if (want > ready) await bulkJobs(t, 'depth', 'ready', want - ready);
      log(`DEPTH ${engine} @${label(size)} ready`);
      await timed(10, async () => (await q.claimBatch(1, 'bench'))[0]?.ack());
      const claim: number[] = [];
      for (let i = 0; i < CLAIMS; i++) {
        const t0 = now();
        const [job] = await q.claimBatch(1, 'bench');
        claim.push(now() - t0);
        await job?.ack();
      }
      const stats = await timed(CALLS, () => q.stats());
      const dead = await timed(CALLS, () => q.listDead({ limit: 100 }));
      const t0 = now();
      const w = startWorker(q, 'depth');
      const deadline = Date.now() + 120_000;
      while (w.handled() < m && Date.now() < deadline) await sleep(2);
      const rate = (w.handled() * 1000) / (now() - t0);
      await w.stop();
      const l = label(size);
      out[`${p}claim_p50_ms@${l}`] = percentile(claim, 50);
      out[`${p}claim_p99_ms@${l}`] = percentile(claim, 99);
      out[`${p}drain_per_s@${l}`] = rate;
      out[`${p}stats_p50_ms@${l}`] = median(stats);
      out[`${p}list_dead_p50_ms@${l}`] = median(dead);
      claimP99.push(percentile(claim, 99));
      drain.push(rate);
      log(
        `DEPTH ${engine} @${l}: claim p50 ${percentile(claim, 50).toFixed(2)} ms p99 ${percentile(claim, 99).toFixed(2)} ms; drain ${rate.toFixed(0)}/s over ${m} jobs; stats ${median(stats).toFixed(2)} ms; listDead ${median(dead).toFixed(2)} ms`,
      );
    }
    out[`${p}claim_p99_largest_over_smallest`] = claimP99[claimP99.length - 1]! / claimP99[0]!;
    out[`${p}drain_largest_over_smallest`] = drain[drain.length - 1]! / drain[0]!;
    return out;
  } finally {
    await store.close();
    await t.cleanup();
  }
}
