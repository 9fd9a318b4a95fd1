/**
 * Profiles B2 on the QueueWorker: claims, jobs per claim, ack batch sizes and wall time per engine.
 *   npx -y tsx bench/prof-b2.ts [postgres|sqlite] [jobs] [prefetch|default]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openStore } from '../lib/index.js';
import type { Job, Queue } from '../lib/contract/types.js';
import { QueueWorker } from '../lib/worker/queue-worker.js';
import { dropSchema } from './lib/pg.js';
import { PG_URL, uniqueId } from './lib/util.js';

const engine = process.argv[2] === 'sqlite' ? 'sqlite' : 'postgres';
const n = Number(process.argv[3] ?? 5000);
const pf = process.argv[4] === undefined || process.argv[4] === 'default' ? undefined : Number(process.argv[4]);

const schema = uniqueId('prof');
const dir = engine === 'sqlite' ? mkdtempSync(join(tmpdir(), 'prof-')) : '';
const url = engine === 'sqlite' ? `sqlite://${join(dir, 'q.db')}` : PG_URL;
const store = await openStore({ url, ...(engine === 'postgres' ? { schema } : {}) });
const q0 = store.queue('b2');
for (let i = 0; i < n; i += 100)
  await q0.enqueueMany(Array.from({ length: Math.min(100, n - i) }, (_, k) => ({ i: i + k })));

const claims: number[] = [];
const asked: number[] = [];
const acks: number[] = [];
let claimMs = 0;
let ackMs = 0;
const q: Queue = Object.create(q0) as Queue;
q.claimBatch = async (max, w, o) => {
  const t = performance.now();
  asked.push(max);
  const r = await q0.claimBatch(max, w, o);
  claimMs += performance.now() - t;
  claims.push(r.length);
  return r;
};
q.ackBatch = async (jobs: readonly Pick<Job, 'id' | 'claimToken'>[]) => {
  const t = performance.now();
  acks.push(jobs.length);
  const r = await q0.ackBatch(jobs);
  ackMs += performance.now() - t;
  return r;
};
let handled = 0;
let done!: () => void;
const all = new Promise<void>((r) => (done = r));
const t0 = performance.now();
const w = new QueueWorker({
  queue: q,
  handler: async () => {
    if (++handled === n) done();
  },
  name: 'prof',
  concurrency: 10,
  ...(pf === undefined ? {} : { prefetch: pf }),
  idlePollIntervalMs: 1000,
  drainTimeoutMs: 2000,
  workerId: 'prof',
  logger: {
    log: () => undefined,
    warn: (m) => process.stderr.write(`${m}\n`),
    error: (m) => process.stderr.write(`${m}\n`),
  },
});
w.start();
await all;
const tHandled = performance.now() - t0;
for (;;) {
  const st = await q0.stats();
  if (st.pending + st.processing === 0) break;
  await new Promise((r) => setTimeout(r, 2));
}
const tDone = performance.now() - t0;
await w.stop();
const hist = (xs: number[]): string => {
  const m = new Map<number, number>();
  for (const x of xs) m.set(x, (m.get(x) ?? 0) + 1);
  return [...m.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([k, v]) => `${k}x${v}`)
    .join(' ');
};
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
console.log(
  JSON.stringify({
    engine,
    prefetch: pf ?? 'default',
    rate: Math.round((n / tDone) * 1000),
    handledMs: Math.round(tHandled),
    doneMs: Math.round(tDone),
    claims: claims.length,
    jobsPerClaim: +(sum(claims) / claims.length).toFixed(1),
    claimHist: hist(claims),
    askedHist: hist(asked),
    claimMsAvg: +(claimMs / claims.length).toFixed(2),
    acks: acks.length,
    ackHist: hist(acks),
    ackMsAvg: +(ackMs / acks.length).toFixed(2),
    roundTripsPerJob: +((claims.length + acks.length) / n).toFixed(3),
  }),
);
await store.close();
if (engine === 'postgres') await dropSchema(schema);
else rmSync(dir, { recursive: true, force: true });
