/**
 * PostgreSQL: a claim of a queue with a per-key rate limit beside W rate windows of the running
 * period (keys used this period, none of them the claim's), the windows written after the schema
 * was made and never analyzed (autovacuum had not come by). 150 claims of 20 over 1,000 keys, each
 * acked; the median of the last 140.
 *
 *   npx tsx bench/rate-windows.ts [W=100000]
 */
import pg from 'pg';
import { median, now } from './lib/util.js';
import { scaleTarget } from './scale/env.js';
const W = Number(process.argv[2] ?? 100000);
const t = await scaleTarget('postgres');
const store = await t.open();
try {
  const q = store.queue('kr', { limitKeys: { rateLimitKey: 'payload.k' } });
  await q.setLimits({ keyRateLimit: { max: 1_000_000, perMs: 3_600_000 } });
  const c = new pg.Client({ connectionString: t.url });
  await c.connect();
  const ms = await store.now();
  const win = Math.floor(ms / 3_600_000) * 3_600_000;
  await c.query(
    `INSERT INTO ${t.schema}.key_rate_windows (queue, key, window_start, window_count) SELECT 'kr', 'w' || g, ${win}, 1 FROM generate_series(1, ${W}) g`,
  );
  await c.end();
  await q.enqueueMany(Array.from({ length: 4000 }, (_, i) => ({ k: `k-${i % 1000}` })));
  const times: number[] = [];
  for (let i = 0; i < 150; i++) {
    const t0 = now();
    const jobs = await q.claimBatch(20, 'w');
    times.push(now() - t0);
    await q.ackBatch(jobs);
  }
  console.log(`claim of 20 beside ${W} windows of the period: p50 ${median(times.slice(10)).toFixed(2)} ms`);
} finally {
  await store.close();
  await t.cleanup();
}
