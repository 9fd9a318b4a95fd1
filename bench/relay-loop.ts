/**
 * The relay's claim → ack loop alone, without a broker: one `OutboxDispatcher` (`claimSize` 64,
 * `concurrency` 64, as B8) with a no-op handler drains N committed outbox messages. Prints the rate and
 * this process's CPU per message (on SQLite the store's statements run on this thread) and, on PostgreSQL,
 * the server's processes' CPU per message.
 *   npx -y tsx bench/relay-loop.ts [sqlite|postgres] [messages]
 * With RELAY_CPU_PROFILE=<file>, a V8 CPU profile of the drain.
 * To compare two checkouts, run it in each, alternating (A B B A …), and compare within the run.
 */
import { performance } from 'node:perf_hooks';
import { OutboxDispatcher } from '../lib/outbox/index.js';
import { scaleTarget } from './scale/env.js';
import { uniqueId } from './lib/util.js';
import { cpuProfile, POSTGRES_PROCESSES, processesMs } from './lib/cpu.js';

const engine = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite';
const n = Number(process.argv[3] ?? 20_000);
const quiet = { log: () => undefined, warn: (m: string) => process.stderr.write(`${m}\n`), error: () => undefined };

const target = await scaleTarget(engine);
const store = await target.open();
const name = uniqueId('loop');
for (let done = 0; done < n; done += 500) {
  await store.withTx(async (tx) => {
    for (let i = done; i < Math.min(n, done + 500); i++) await tx.outboxEnqueue(name, { i });
  });
}
let handled = 0;
const ac = new AbortController();
const dispatcher = new OutboxDispatcher({
  store,
  outbox: name,
  handler: async () => {
    handled += 1;
  },
  logger: quiet,
  settings: { claimSize: 64, concurrency: 64, busyPollIntervalMs: 5 },
});
const queue = store.outbox(name).queue;
// With RELAY_CPU_PROFILE=<file>: a V8 CPU profile of the drain alone (not the enqueues before it).
const stopProfile = await cpuProfile(process.env.RELAY_CPU_PROFILE);
const c0 = process.cpuUsage();
const db0 = processesMs(POSTGRES_PROCESSES);
const t0 = performance.now();
const run = dispatcher.run(ac.signal);
// Every message handled and its ack landed: nothing pending or claimed.
for (;;) {
  if (handled >= n) {
    const s = await queue.stats();
    if (s.pending + s.processing === 0) break;
  }
  await new Promise((r) => setTimeout(r, 2));
}
const t1 = performance.now();
const cpu = process.cpuUsage(c0);
const db = processesMs(POSTGRES_PROCESSES) - db0;
// After the readings: writing the profile is not the drain's CPU.
await stopProfile();
ac.abort();
await run;
console.log(
  `${engine} relay loop, ${n} messages: ${Math.round(n / ((t1 - t0) / 1000))} msgs/s, ` +
    `${((cpu.user + cpu.system) / n).toFixed(1)} µs CPU per message` +
    (engine === 'postgres' ? `, PostgreSQL's processes ${((db / n) * 1000).toFixed(1)} µs` : ''),
);
await store.close();
await target.cleanup();
