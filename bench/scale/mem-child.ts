/**
 * Child process of the MEM workload (run with --expose-gc): heap and RSS of
 * 10k in-flight jobs in the library's queue worker (concurrency 10 000, every
 * handler waiting), and of 1,000 wake listeners on distinct queues. Prints one
 * JSON line.
 *
 *   node --expose-gc --import tsx bench/scale/mem-child.ts <sqlite file | postgres schema>
 */
import { openStore } from '../../lib/index.js';
import type { WakeReceiver } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { PG_URL, sleep } from '../lib/util.js';

const [engine, where] = process.argv.slice(2);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');

async function settled(): Promise<NodeJS.MemoryUsage> {
  for (let i = 0; i < 3; i++) {
    gc!();
    await sleep(50);
  }
  return process.memoryUsage();
}

const store = await openStore(engine === 'postgres' ? { url: PG_URL, schema: where! } : { url: `sqlite:${where!}` });
const q = store.queue('mem');
const N = 10_000;
for (let i = 0; i < N; i += 100)
  await q.enqueueMany(Array.from({ length: 100 }, (_, k) => ({ i: i + k, kind: 'mem' })));
const base = await settled();
let release!: () => void;
const released = new Promise<void>((resolve) => (release = resolve));
let handled = 0;
const w = new QueueWorker({
  queue: q,
  handler: async () => {
    handled++;
    await released;
  },
  name: 'bench:mem',
  concurrency: N,
  prefetch: 0,
  idlePollIntervalMs: 1000,
  drainTimeoutMs: 5000,
  workerId: 'bench-mem',
  logger: { log: () => undefined, warn: () => undefined, error: (m) => process.stderr.write(`${m}\n`) },
});
w.start();
const deadline = Date.now() + 120_000;
while (handled < N && Date.now() < deadline) await sleep(10);
const inflight = await settled();
release();
await w.stop();

const base2 = await settled();
const receivers: WakeReceiver[] = [];
for (let i = 0; i < 1000; i++) receivers.push(store.queue(`listen-${i}`).listen());
await sleep(200);
const listening = await settled();
for (const r of receivers) r.close();
await store.close();
process.stdout.write(
  `${JSON.stringify({
    inflight: handled,
    heap_per_10k_inflight_mb: (inflight.heapUsed - base.heapUsed) / 2 ** 20,
    rss_per_10k_inflight_mb: (inflight.rss - base.rss) / 2 ** 20,
    heap_per_1000_listeners_mb: (listening.heapUsed - base2.heapUsed) / 2 ** 20,
    rss_per_1000_listeners_mb: (listening.rss - base2.rss) / 2 ** 20,
  })}\n`,
);
process.exit(0);
