/**
 * Child process of the FAIR workload: writes flat out to a SQLite file with
 * back-to-back `withTx` transactions (two enqueues with a short await
 * between them) until it is killed or `seconds` pass. Prints `ready` once its
 * store is open and `done <transactions>` at the end.
 *
 *   tsx bench/scale/fair-writer.ts <file> <seconds> <fairness on|off>
 */
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';

const [file, seconds, fair] = process.argv.slice(2);
const store = await openSqliteStore({ path: file!, writeFairness: fair === 'on' });
process.stdout.write('ready\n');
const until = Date.now() + Number(seconds) * 1000;
let n = 0;
while (Date.now() < until) {
  await store.withTx(async (tx) => {
    await tx.enqueue('busy', { n });
    await new Promise((r) => setImmediate(r)); // a short await inside the transaction
    await tx.enqueue('busy', { n, second: true });
  });
  n++;
}
await store.close();
process.stdout.write(`done ${n}\n`);
process.exit(0);
