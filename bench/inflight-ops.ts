/**
 * PostgreSQL: one job's handle operations (heartbeat, then ack) beside many jobs in flight, after
 * statistics taken while none was processing (as autovacuum may take them at a quiet moment). Claims
 * `inflight` jobs, then times `ops` heartbeats and `ops` acks of single jobs, one at a time; prints the
 * mean and p99 of each, with the same at 10 jobs in flight for scale.
 *
 *   npx tsx bench/inflight-ops.ts [inflight=20000] [ops=500]
 */
import { openPostgresStore } from '../lib/engines/postgres/index.js';
import type { Job } from '../lib/contract/types.js';
import { dropSchema, pgExec } from './lib/pg.js';
import { PG_URL, percentile } from './lib/util.js';

const INFLIGHT = Number(process.argv[2] ?? 20_000);
const OPS = Number(process.argv[3] ?? 500);
const schema = `inflight_${process.pid}`;
const silent = { log: () => undefined, warn: () => undefined, error: (m: string, e?: unknown) => console.error(m, e) };
const store = await openPostgresStore({ connectionString: PG_URL, schema, logger: silent });

function summary(ms: number[]): string {
  const mean = ms.reduce((a, b) => a + b, 0) / ms.length;
  return `mean ${mean.toFixed(3)} ms, p99 ${percentile(ms, 99).toFixed(3)} ms`;
}

/** Keeps `inflight` jobs of a fresh queue claimed and times single heartbeats and acks of `OPS` of them. */
async function measure(queue: string, inflight: number): Promise<string> {
  const q = store.queue(queue);
  const beats: number[] = [];
  const acks: number[] = [];
  while (acks.length < OPS) {
    for (let i = 0; i < inflight; i += 1000)
      await q.enqueueMany(Array.from({ length: Math.min(1000, inflight - i) }, () => 1));
    const jobs: Job[] = [];
    while (jobs.length < inflight) jobs.push(...(await q.claimBatch(Math.min(500, inflight - jobs.length), 'w')));
    const timed = jobs.slice(0, OPS - acks.length);
    for (const job of timed) {
      let t = performance.now();
      if (!(await job.heartbeat(60_000))) throw new Error('heartbeat refused');
      beats.push(performance.now() - t);
      t = performance.now();
      if (!(await job.ack())) throw new Error('ack refused');
      acks.push(performance.now() - t);
    }
    const rest = jobs.slice(timed.length);
    for (let i = 0; i < rest.length; i += 5000) await q.ackBatch(rest.slice(i, i + 5000));
  }
  return `${inflight} in flight: heartbeat ${summary(beats)}; ack ${summary(acks)}`;
}

// Statistics of a jobs table holding pending jobs and none processing.
await store.queue('idle').enqueueMany(Array.from({ length: 1000 }, () => 1));
await pgExec(`ANALYZE "${schema}".jobs`);
console.log(await measure('few', 10));
console.log(await measure('many', INFLIGHT));
await store.close();
await dropSchema(schema);
