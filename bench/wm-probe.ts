/**
 * Probe: two producer stores enqueue into one queue that a third store's worker drains, with the
 * worker keeping up; prints the enqueue-return → handler-start latency distribution and how many
 * jobs waited more than 250 ms (a job committed after a later-stamped one and left behind the
 * claim watermark until the sweep).
 *   npx tsx bench/wm-probe.ts [jobsPerProducer=1500]
 */
import { openStore } from '../lib/index.js';
import { now, percentile, sleep } from './lib/util.js';
import { startWorker } from './scale/worker.js';

const N = Number(process.argv[2] ?? 1500);
const url = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `bench_wm_${process.pid}`;
const w = await openStore({ url, schema });
const p1 = await openStore({ url, schema });
const p2 = await openStore({ url, schema });
const returned = new Map<string, number>();
const started = new Map<string, number>();
const worker = startWorker(w.queue('wm'), 'wm', (p) => started.set((p as { k: string }).k, now()));
async function produce(store: typeof p1, name: string): Promise<void> {
  const q = store.queue('wm');
  for (let i = 0; i < N; i++) {
    const k = `${name}${i}`;
    await q.enqueue({ k });
    returned.set(k, now());
    if (i % 3 === 0) await sleep(1);
  }
}
await Promise.all([produce(p1, 'a'), produce(p2, 'b')]);
const deadline = now() + 10_000;
while (started.size < 2 * N && now() < deadline) await sleep(20);
await worker.stop();
const lat = [...returned].map(([k, t]) => (started.get(k) ?? Infinity) - t);
const late = lat.filter((x) => x > 250).length;
console.log(
  `${lat.length} jobs: p50 ${percentile(lat, 50).toFixed(2)} ms, p99 ${percentile(lat, 99).toFixed(2)} ms, max ${Math.max(...lat).toFixed(0)} ms, > 250 ms: ${late}`,
);
for (const s of [p1, p2, w]) await s.close();
const pg = (await import('pg')).default;
const c = new pg.Client({ connectionString: url });
await c.connect();
await c.query(`DROP SCHEMA "${schema}" CASCADE`);
await c.end();
