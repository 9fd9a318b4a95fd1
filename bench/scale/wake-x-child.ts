/**
 * Child process of B3x: the worker side of a cross-process wake.
 *   tsx bench/scale/wake-x-child.ts <url> <schema|->
 * Opens the store, runs the library's queue worker on queue 'b3x' and, on
 * PostgreSQL, a bare LISTEN on channel bench_b3x on its own connection. Prints
 * `ready`, then `job <i> <epochMs>` at each handler start and `notify <i>
 * <epochMs>` at each bare notification. Exits when stdin closes.
 * `B3X_CLAIM_DURABILITY=deferred` opens the worker's store with claims that do not wait for their
 * WAL flush (PostgreSQL), to see what the claim's flush adds to the wake. `B3X_TRACE=1` also prints
 * `wake <epochMs>` when the queue's wake arrives here and `claim <startEpochMs> <endEpochMs> <n>`
 * around each claim of the worker (bench/scale/wake-x-trace.ts reads them), and on PostgreSQL
 * `handoff <epochMs>` when a cross-process hand-off's notification (`x:`) arrives on a bare LISTEN of
 * the engine channel. `B3X_HANDOFF=1` opens the store with `crossProcessHandoff: true` (the producer
 * side does the same), so an idle worker is offered to the producer's enqueues.
 */
import { createInterface } from 'node:readline';
import pg from 'pg';
import { openStore } from '../../lib/index.js';
import { epochNow, indexOf } from '../lib/util.js';
import { startWorker } from './worker.js';

const [url, schema] = process.argv.slice(2);
const claimDurability = process.env.B3X_CLAIM_DURABILITY === 'deferred' ? ('deferred' as const) : undefined;
const handoff = process.env.B3X_HANDOFF === '1' && !url!.startsWith('sqlite:');
const trace = process.env.B3X_TRACE === '1';
const store = await openStore({
  url: url!,
  ...(schema && schema !== '-' ? { schema } : {}),
  ...(claimDurability ? { claimDurability } : {}),
  ...(handoff ? { crossProcessHandoff: true } : {}),
});
const queue = store.queue('b3x');
if (trace) {
  const claim = queue.claimBatch.bind(queue);
  queue.claimBatch = async (...args: Parameters<typeof claim>) => {
    const t0 = epochNow();
    const jobs = await claim(...args);
    process.stdout.write(`claim ${t0} ${epochNow()} ${jobs.length}\n`);
    return jobs;
  };
  const wakes = queue.listen();
  void (async () => {
    while ((await wakes.recv()) !== null) process.stdout.write(`wake ${epochNow()}\n`);
  })();
}
const w = startWorker(queue, 'b3x', (p) => process.stdout.write(`job ${indexOf(p)} ${epochNow()}\n`));
let listener: pg.Client | null = null;
if (!url!.startsWith('sqlite:')) {
  listener = new pg.Client({ connectionString: url });
  await listener.connect();
  const channel = `alkstore:${schema && schema !== '-' ? schema : 'alkstore'}`;
  listener.on('notification', (m) => {
    if (m.channel === 'bench_b3x') process.stdout.write(`notify ${m.payload} ${epochNow()}\n`);
    else if (m.payload?.startsWith('x:')) process.stdout.write(`handoff ${epochNow()}\n`);
  });
  await listener.query('LISTEN bench_b3x');
  if (trace) await listener.query(`LISTEN "${channel}"`);
}
process.stdout.write('ready\n');
createInterface({ input: process.stdin }).on('close', () => {
  void (async () => {
    await w.stop();
    await listener?.end().catch(() => undefined);
    await store.close();
    process.exit(0);
  })();
});
