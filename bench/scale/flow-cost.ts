/**
 * FLOWCOST: what flow control costs the drain, both engines. B2's drain (the
 * library's queue worker, concurrency 10, default prefetch, a no-op handler,
 * N pre-enqueued jobs, timed until every job is acked) on six queues of the
 * same store, each with N jobs:
 *
 * - `none`: no limit (the baseline of the run);
 * - `key-concurrency`: a per-key concurrency limit of 1 over 1,000 keys
 *   (`limitKeys.concurrencyKey`, jobs of the keys interleaved);
 * - `key-rate`: a per-key rate limit over 1,000 keys (`keyRateLimit`
 *   1,000,000 per hour, never reached: the cost of the accounting);
 * - `global-concurrency`: `globalConcurrency` 100, above what the worker runs (the cost of the
 *   accounting);
 * - `global-concurrency-binding`: `globalConcurrency` 10, the worker's concurrency (its prefetch
 *   waits for the limit);
 * - `ordering-keys`: ordering keys over 1,000 keys (one job of a key at a
 *   time, in enqueue order).
 *
 * Rounds alternate the order of the variants so drift falls on every one
 * alike; each figure is the median over rounds, and its ratio to `none`.
 *
 *   npm run bench -- --workloads FLOWCOST [--engines sqlite,postgres] [--scale F] [--runs R]
 *
 * N is 10,000 × `--scale` (at least 2,000); the rounds are `--runs` (at least 2).
 */
import type { Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { median, now, sleep, withTimeout } from '../lib/util.js';
import type { Metrics } from '../workloads.js';
import { scaleTarget, type ScaleEngine } from './env.js';

export const FLOW_VARIANTS = [
  'none',
  'key-concurrency',
  'key-rate',
  'global-concurrency',
  'global-concurrency-binding',
  'ordering-keys',
] as const;
type Variant = (typeof FLOW_VARIANTS)[number];

const KEYS = 1_000;
const CONCURRENCY = 10;
const HOUR = 3_600_000;

async function prepare(store: Store, v: Variant, name: string, n: number): Promise<Queue> {
  const payloads = Array.from({ length: n }, (_, i) => ({ i, k: `k-${i % KEYS}` }));
  const batches = (size: number): { i: number; k: string }[][] => {
    const out = [];
    for (let i = 0; i < payloads.length; i += size) out.push(payloads.slice(i, i + size));
    return out;
  };
  switch (v) {
    case 'none': {
      const q = store.queue(name);
      for (const b of batches(1_000)) await q.enqueueMany(b);
      return q;
    }
    case 'key-concurrency': {
      const q = store.queue(name, { limitKeys: { concurrencyKey: 'payload.k' } });
      await q.setLimits({ concurrencyLimit: 1 });
      for (const b of batches(1_000)) await q.enqueueMany(b);
      return q;
    }
    case 'key-rate': {
      const q = store.queue(name, { limitKeys: { rateLimitKey: 'payload.k' } });
      await q.setLimits({ keyRateLimit: { max: 1_000_000, perMs: HOUR } });
      for (const b of batches(1_000)) await q.enqueueMany(b);
      return q;
    }
    case 'global-concurrency':
    case 'global-concurrency-binding': {
      const q = store.queue(name);
      await q.setLimits({ globalConcurrency: v === 'global-concurrency' ? 10 * CONCURRENCY : CONCURRENCY });
      for (const b of batches(1_000)) await q.enqueueMany(b);
      return q;
    }
    case 'ordering-keys': {
      const q = store.queue(name);
      for (const b of batches(1_000)) await q.enqueueBulk(b.map((p) => ({ payload: p, opts: { orderingKey: p.k } })));
      return q;
    }
  }
}

/** Drains `n` jobs of `q` with the library's queue worker; jobs per second until the last ack. */
async function drain(q: Queue, n: number, name: string): Promise<number> {
  let handled = 0;
  const w = new QueueWorker({
    queue: q,
    handler: async () => {
      handled++;
    },
    name: `bench:${name}`,
    concurrency: CONCURRENCY,
    idlePollIntervalMs: 1000,
    drainTimeoutMs: 2000,
    workerId: `bench-${name}`,
    logger: {
      log: () => undefined,
      warn: (m) => process.stderr.write(`${m}\n`),
      error: (m) => process.stderr.write(`${m}\n`),
    },
  });
  const t0 = now();
  w.start();
  try {
    const end = Date.now() + 300_000;
    for (;;) {
      if (handled >= n) {
        const st = await q.stats();
        if (st.pending + st.processing === 0) break;
      }
      if (Date.now() > end) throw new Error(`FLOWCOST: ${name} drained ${handled} of ${n} in 300 s`);
      await sleep(handled >= n ? 2 : 5);
    }
    return (n * 1000) / (now() - t0);
  } finally {
    await withTimeout('QueueWorker stop', 15_000, w.stop()).catch(() => undefined);
  }
}

export async function flowCostWorkload(
  engine: ScaleEngine,
  scale: number,
  rounds: number,
  log: (m: string) => void,
): Promise<Metrics> {
  const n = Math.max(2_000, Math.round(10_000 * scale));
  const rates = new Map<Variant, number[]>(FLOW_VARIANTS.map((v) => [v, []]));
  const t = await scaleTarget(engine);
  const store = await t.open();
  try {
    for (let r = 0; r < Math.max(2, rounds); r++) {
      const order = r % 2 === 0 ? [...FLOW_VARIANTS] : [...FLOW_VARIANTS].reverse();
      for (const v of order) {
        const name = `fc-${v}-${r}`;
        const q = await prepare(store, v, name, n);
        if (t.engine === 'postgres') await t.exec(`VACUUM ANALYZE ${t.jobs}`);
        const rate = await drain(q, n, name);
        rates.get(v)!.push(rate);
        log(`FLOWCOST ${engine} round ${r + 1} ${v}: ${rate.toFixed(0)} jobs/s over ${n} jobs`);
      }
    }
  } finally {
    await store.close();
    await t.cleanup();
  }
  const p = `FLOWCOST.${engine}.`;
  const base = median(rates.get('none')!);
  const out: Metrics = {};
  for (const v of FLOW_VARIANTS) {
    const m = median(rates.get(v)!);
    out[`${p}drain_per_s@${v}`] = m;
    if (v !== 'none') out[`${p}ratio@${v}`] = m / base;
  }
  log(
    `FLOWCOST ${engine}: ${FLOW_VARIANTS.filter((v) => v !== 'none')
      .map((v) => `${v} ${out[`${p}ratio@${v}`]!.toFixed(2)}x`)
      .join(', ')} of ${base.toFixed(0)} jobs/s unlimited`,
  );
  return out;
}
