/**
 * RATEKEYS: the cost of a limited claim (per-key rate limit) as the number of
 * distinct `rateLimitKey`s ever used grows, both engines. Two queues carry
 * the same backlog (20 000 ready jobs over 100 keys, `keyRateLimit` 1 000 per
 * hour, never reached); one has the rate windows of those 100 keys, the other
 * also those of 99 900 more keys (half in ended windows, half in the current
 * window below the limit), written with SQL as earlier claims would have left
 * them, and no sweep runs. Claims of 10 jobs (each batch acked, untimed)
 * alternate between the queues; the figure is the claim's median and p99 on
 * each, and their ratio (the promise: at most 1.2).
 *
 *   npm run bench -- --workloads RATEKEYS [--engines sqlite,postgres] [--scale F]
 *
 * `--scale` multiplies the 100 000 keys (at least 1 000).
 */
import { median, now, percentile } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { label, scaleTarget, type ScaleEngine, type ScaleTarget } from './env.js';

const HOUR = 3_600_000;
const READY = 20_000;
const LIVE_KEYS = 100;
const CLAIMS = 300;
const BATCH = 10;

/** Window rows of `keys` keys named `<prefix>-<i>` (i from 0) on `queue`, all starting at `windowStart`, each counting `count`. */
async function windowRows(
  t: ScaleTarget,
  queue: string,
  prefix: string,
  keys: number,
  windowStart: number,
  count: number,
): Promise<void> {
  if (keys <= 0) return;
  if (t.engine === 'postgres') {
    await t.sql(
      `INSERT INTO ${t.schema}.key_rate_windows (queue, key, window_start, window_count)
       SELECT $1, $2 || '-' || i, $3::bigint, $4::int FROM generate_series(0, $5::int - 1) AS g(i)`,
      [queue, prefix, windowStart, count, keys],
    );
  } else {
    await t.sql(
      `WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < ? - 1)
       INSERT INTO __alkstore_key_rate_windows (queue, key, window_start, window_count)
       SELECT ?, ? || '-' || i, ?, ? FROM g`,
      [keys, queue, prefix, windowStart, count],
    );
  }
}

export async function rateKeysWorkload(engine: ScaleEngine, scale: number, log: (m: string) => void): Promise<Metrics> {
  const t = await scaleTarget(engine);
  const store = await t.open();
  const many = Math.max(1_000, Math.round(100_000 * scale));
  const p = `RATEKEYS.${engine}.`;
  try {
    const dbNow = await store.now();
    const current = Math.floor(dbNow / HOUR) * HOUR;
    const queues = [
      { keys: LIVE_KEYS, q: store.queue('rk-few', { limitKeys: { rateLimitKey: 'payload.k' } }) },
      { keys: many, q: store.queue('rk-many', { limitKeys: { rateLimitKey: 'payload.k' } }) },
    ];
    for (const { keys, q } of queues) {
      await q.setLimits({ keyRateLimit: { max: 1_000, perMs: HOUR } });
      for (let i = 0; i < READY; i += 1_000)
        await q.enqueueMany(Array.from({ length: 1_000 }, (_, j) => ({ k: `k-${(i + j) % LIVE_KEYS}` })));
      // The backlog's keys were used in the last window; the other keys, half then and half in this one.
      await windowRows(t, q.name, 'k', LIVE_KEYS, current - HOUR, 1);
      const extra = keys - LIVE_KEYS;
      await windowRows(t, q.name, 'old', Math.floor(extra / 2), current - HOUR, 1);
      await windowRows(t, q.name, 'now', extra - Math.floor(extra / 2), current, 1);
    }
    if (t.engine === 'postgres') await t.exec(`VACUUM ANALYZE ${t.schema}.key_rate_windows, ${t.jobs}`);
    else await t.exec('ANALYZE');
    log(`RATEKEYS ${engine}: ${READY} ready jobs over ${LIVE_KEYS} keys on each queue; ${label(many)} keys ever used`);
    const lat = queues.map(() => [] as number[]);
    // Warm both, then alternate so drift (caches, autovacuum) falls on both alike.
    for (const { q } of queues) for (let i = 0; i < 10; i++) await q.ackBatch(await q.claimBatch(BATCH, 'bench'));
    for (let i = 0; i < CLAIMS; i++) {
      for (const [n, { q }] of queues.entries()) {
        const t0 = now();
        const jobs = await q.claimBatch(BATCH, 'bench');
        lat[n]!.push(now() - t0);
        if (jobs.length !== BATCH) throw new Error(`claim ${i} on ${q.name} took ${jobs.length} of ${BATCH} jobs`);
        await q.ackBatch(jobs);
      }
    }
    const [few, lots] = lat as [number[], number[]];
    const out: Metrics = {
      [`${p}claim_p50_ms@${LIVE_KEYS}`]: median(few),
      [`${p}claim_p99_ms@${LIVE_KEYS}`]: percentile(few, 99),
      [`${p}claim_p50_ms@${label(many)}`]: median(lots),
      [`${p}claim_p99_ms@${label(many)}`]: percentile(lots, 99),
      [`${p}claim_p50_ratio`]: median(lots) / median(few),
    };
    log(
      `RATEKEYS ${engine}: claim of ${BATCH} p50 ${median(few).toFixed(2)} ms (p99 ${percentile(few, 99).toFixed(2)}) with ${LIVE_KEYS} keys ever used, ${median(lots).toFixed(2)} ms (p99 ${percentile(lots, 99).toFixed(2)}) with ${label(many)}: ${(median(lots) / median(few)).toFixed(2)}x`,
    );
    return out;
  } finally {
    await store.close();
    await t.cleanup();
  }
}
