/**
 * STATS: `queue.stats()` latency at 10k, 100k and 1M jobs on one queue (80 %
 * ready, 10 % dead, 10 % due in 1–2 h, 100 processing; then 200 enqueue,
 * claim and ack cycles of ordinary traffic), both engines, next to
 * the row-counting query stats() ran before the counters (migration/step 4),
 * measured on the same rows.
 */
import { median, now, percentile } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { bulkJobs, label, scalePoints, scaleTarget, type ScaleEngine } from './env.js';

const CALLS = 100;
const COUNT_CALLS = 10;

function countRowsSql(engine: ScaleEngine, jobs: string): string[] {
  if (engine === 'postgres') {
    return [
      `WITH t AS (SELECT floor(extract(epoch from clock_timestamp()) * 1000)::bigint AS ms)
       SELECT count(j.id) FILTER (WHERE j.state = 'pending') AS pending, count(j.id) FILTER (WHERE j.state = 'processing') AS processing,
              count(j.id) FILTER (WHERE j.state = 'dead') AS dead,
              coalesce(t.ms - min(j.run_at) FILTER (WHERE j.state = 'pending' AND j.run_at <= t.ms), 0) AS oldest
       FROM t LEFT JOIN ${jobs} j ON j.queue = $1::text GROUP BY t.ms`,
    ];
  }
  return [
    `SELECT (SELECT count(*) FROM ${jobs} WHERE queue = ? AND state = 'pending') AS pending,
       (SELECT count(*) FROM ${jobs} WHERE queue = ? AND state = 'processing') AS processing,
       (SELECT count(*) FROM ${jobs} WHERE queue = ? AND state = 'dead') AS dead`,
    `SELECT min(run_at) FROM ${jobs} WHERE queue = ? AND state = 'pending' AND run_at <= CAST(unixepoch('subsec') * 1000 AS INTEGER)`,
  ];
}

export async function statsWorkload(engine: ScaleEngine, scale: number, log: (m: string) => void): Promise<Metrics> {
  const t = await scaleTarget(engine);
  const store = await t.open();
  const out: Metrics = {};
  try {
    const q = store.queue('depth');
    let have = 0;
    const p50s: number[] = [];
    for (const size of scalePoints(scale)) {
      const add = size - have;
      log(`STATS ${engine}: filling to ${label(size)} jobs`);
      await bulkJobs(t, 'depth', 'ready', Math.round(add * 0.8));
      await bulkJobs(t, 'depth', 'dead', Math.round(add * 0.1));
      await bulkJobs(t, 'depth', 'delayed', add - Math.round(add * 0.8) - Math.round(add * 0.1));
      have = size;
      if (p50s.length === 0) await q.claimBatch(100, 'bench'); // 100 processing rows
      // Ordinary traffic after the bulk fill (whose few big statements leave unfolded counter rows):
      // the statements fold as they would in a running system.
      for (let i = 0; i < 200; i++) {
        await q.enqueue({ i });
        const [j] = await q.claimBatch(1, 'bench');
        if (j) await j.ack();
      }
      for (let i = 0; i < 5; i++) await q.stats();
      const lat: number[] = [];
      for (let i = 0; i < CALLS; i++) {
        const t0 = now();
        await q.stats();
        lat.push(now() - t0);
      }
      const st = await q.stats();
      if (st.pending + st.processing + st.dead !== size)
        throw new Error(
          `STATS ${engine}: stats() counted ${st.pending + st.processing + st.dead} jobs, expected ${size}`,
        );
      const ref: number[] = [];
      for (let i = 0; i < COUNT_CALLS; i++) {
        const t0 = now();
        for (const sql of countRowsSql(engine, t.jobs))
          await t.sql(
            sql,
            engine === 'postgres'
              ? ['depth']
              : sql
                  .split('?')
                  .slice(1)
                  .map(() => 'depth'),
          );
        ref.push(now() - t0);
      }
      const p = `STATS.${engine}.`;
      out[`${p}stats_p50_ms@${label(size)}`] = percentile(lat, 50);
      out[`${p}stats_p99_ms@${label(size)}`] = percentile(lat, 99);
      out[`${p}count_rows_p50_ms@${label(size)}`] = median(ref);
      p50s.push(percentile(lat, 50));
      log(
        `STATS ${engine} @${label(size)}: stats p50 ${percentile(lat, 50).toFixed(3)} ms p99 ${percentile(lat, 99).toFixed(3)} ms; counting rows p50 ${median(ref).toFixed(2)} ms (scheduled ${st.scheduled})`,
      );
    }
    out[`STATS.${engine}.stats_p50_largest_over_smallest`] = p50s[p50s.length - 1]! / p50s[0]!;
    return out;
  } finally {
    await store.close();
    await t.cleanup();
  }
}
