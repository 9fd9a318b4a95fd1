/**
 * The claim and the ack of each kind of flow control, timed one at a time (what FLOWCOST's drain
 * spends its time on): 5,000 jobs over 1,000 keys on each of five queues of one store (no limit,
 * per-key concurrency 1, a per-key rate limit never reached, `globalConcurrency` 100, ordering
 * keys), then 150 rounds of claimBatch(20) and ackBatch on each queue in turn; medians.
 *
 *   npx tsx bench/flow-claims.ts [postgres|sqlite]
 */
import type { Queue } from '../lib/contract/types.js';
import { median, now } from './lib/util.js';
import { scaleTarget } from './scale/env.js';

const engine = process.argv[2] === 'sqlite' ? 'sqlite' : 'postgres';
const N = 5_000;
const t = await scaleTarget(engine);
const store = await t.open();
try {
  const payloads = Array.from({ length: N }, (_, i) => ({ i, k: `k-${i % 1_000}` }));
  const qs: Record<string, Queue> = {
    none: store.queue('none'),
    'key-concurrency': store.queue('kc', { limitKeys: { concurrencyKey: 'payload.k' } }),
    'key-rate': store.queue('kr', { limitKeys: { rateLimitKey: 'payload.k' } }),
    'global-concurrency': store.queue('gc'),
    'ordering-keys': store.queue('ok'),
  };
  await qs['key-concurrency']!.setLimits({ concurrencyLimit: 1 });
  await qs['key-rate']!.setLimits({ keyRateLimit: { max: 1_000_000, perMs: 3_600_000 } });
  await qs['global-concurrency']!.setLimits({ globalConcurrency: 100 });
  for (const [name, q] of Object.entries(qs))
    for (let i = 0; i < N; i += 1_000) {
      const batch = payloads.slice(i, i + 1_000);
      if (name === 'ordering-keys') await q.enqueueBulk(batch.map((p) => ({ payload: p, opts: { orderingKey: p.k } })));
      else await q.enqueueMany(batch);
    }
  const claim = new Map<string, number[]>();
  const ack = new Map<string, number[]>();
  for (let r = 0; r < 150; r++)
    for (const [name, q] of Object.entries(qs)) {
      const t0 = now();
      const jobs = await q.claimBatch(20, 'w');
      const t1 = now();
      await q.ackBatch(jobs);
      claim.set(name, [...(claim.get(name) ?? []), t1 - t0]);
      ack.set(name, [...(ack.get(name) ?? []), now() - t1]);
    }
  const base = median(claim.get('none')!);
  for (const name of Object.keys(qs))
    process.stdout.write(
      `${engine} ${name}: claim of 20 p50 ${median(claim.get(name)!).toFixed(2)} ms (${(median(claim.get(name)!) / base).toFixed(2)}x), ack p50 ${median(ack.get(name)!).toFixed(2)} ms\n`,
    );
} finally {
  await store.close();
  await t.cleanup();
}
