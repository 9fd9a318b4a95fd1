/**
 * Child process of B3x: the worker side of a cross-process wake.
 *   tsx bench/scale/wake-x-child.ts <url> <schema|->
 * Opens the store, runs the library's queue worker on queue 'b3x' and, on
 * PostgreSQL, a bare LISTEN on channel bench_b3x on its own connection. Prints
 * `ready`, then `job <i> <epochMs>` at each handler start and `notify <i>
 * <epochMs>` at each bare notification. Exits when stdin closes.
 */
import { createInterface } from 'node:readline';
import pg from 'pg';
import { openStore } from '../../lib/index.js';
import { epochNow, indexOf } from '../lib/util.js';
import { startWorker } from './worker.js';

const [url, schema] = process.argv.slice(2);
const store = await openStore(schema && schema !== '-' ? { url: url!, schema } : { url: url! });
const w = startWorker(store.queue('b3x'), 'b3x', (p) => process.stdout.write(`job ${indexOf(p)} ${epochNow()}\n`));
let listener: pg.Client | null = null;
if (!url!.startsWith('sqlite:')) {
  listener = new pg.Client({ connectionString: url });
  await listener.connect();
  listener.on('notification', (m) => process.stdout.write(`notify ${m.payload} ${epochNow()}\n`));
  await listener.query('LISTEN bench_b3x');
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
