/**
 * Child process of the FLEET workload.
 *   tsx bench/scale/fleet-child.ts worker <schema>          runs the library's queue worker on queue 'fleet'
 *   tsx bench/scale/fleet-child.ts producer <schema> <jobs> enqueues <jobs> jobs in batches of 100
 * Prints `ready` once its store is open, starts on a `go` line on stdin, prints
 * `handled <n>` (worker, every 100 ms) or `produced <n>` (producer, at the end).
 */
import { createInterface } from 'node:readline';
import { openStore } from '../../lib/index.js';
import { PG_URL } from '../lib/util.js';
import { startWorker } from './worker.js';

const [mode, schema, jobs] = process.argv.slice(2);
const store = await openStore({ url: PG_URL, schema: schema! });
const q = store.queue('fleet');
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on('line', (l) => l.trim() === 'go' && resolve()));
const stop = new Promise<void>((resolve) => lines.on('line', (l) => l.trim() === 'stop' && resolve()));
await go;
if (mode === 'producer') {
  const n = Number(jobs);
  for (let i = 0; i < n; i += 100)
    await q.enqueueMany(Array.from({ length: Math.min(100, n - i) }, (_, k) => ({ i: i + k })));
  process.stdout.write(`produced ${n}\n`);
  await stop;
} else {
  const w = startWorker(q, 'fleet');
  const timer = setInterval(() => process.stdout.write(`handled ${w.handled()}\n`), 100);
  await stop;
  clearInterval(timer);
  await w.stop();
  process.stdout.write(`handled ${w.handled()}\n`);
}
await store.close();
process.exit(0);
