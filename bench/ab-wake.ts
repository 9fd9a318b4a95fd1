/**
 * Fine-grained A/B of the PostgreSQL wake path (the core of B3) of two
 * checkouts in ONE process, samples alternating A, B, B, A, … so a burst of
 * load on the shared machine lands on both, beside the bare NOTIFY → LISTEN
 * round trip between two plain connections, sampled in the same rotation.
 *
 * One sample of a side: an idle receiver on `queue.listen()` of its store;
 * t0; `enqueue` on the same store; await the wake; `claimBatch(10)` on the
 * same store (the job must be there); t1. Also reported: the time from t0
 * until the wake alone. Same-store is the B3 setting (producer and worker in
 * one process); `--cross` puts the receiver and the claim on a second store
 * of the same schema (another process's view).
 *
 *   npx -y tsx bench/ab-wake.ts <dirA> <dirB> [samples=300] [--cross]
 */
import { resolve } from 'node:path';
import pg from 'pg';
import { loadOpen, PG_URL, type Open } from './lib/ab-checkout.js';
import type { Queue, Store, WakeReceiver } from '../lib/contract/types.js';

const args = process.argv.slice(2).filter((a) => a !== '--cross');
const CROSS = process.argv.includes('--cross');
const [dirA, dirB, samplesArg] = args;
if (!dirA || !dirB) throw new Error('usage: ab-wake.ts <dirA> <dirB> [samples] [--cross]');
const SAMPLES = Number(samplesArg ?? 300);

interface Side {
  name: string;
  stores: Store[];
  producer: Queue;
  consumer: Queue;
  rx: WakeReceiver;
  wake: number[];
  claimed: number[];
}

const schemas: string[] = [];
async function side(name: string, open: Open, tag: string): Promise<Side> {
  const schema = `abwake_${name.toLowerCase()}_${tag}`;
  schemas.push(schema);
  const store = await open({ url: PG_URL, schema });
  const other = CROSS ? await open({ url: PG_URL, schema }) : store;
  const consumer = other.queue('w');
  return {
    name,
    stores: CROSS ? [store, other] : [store],
    producer: store.queue('w'),
    consumer,
    rx: consumer.listen(),
    wake: [],
    claimed: [],
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function sample(s: Side, i: number, record: boolean): Promise<void> {
  // Drain a stale wake (there should be none) so the next recv waits for this enqueue.
  while ((await s.rx.recv(AbortSignal.abort())) !== null) {
    /* stale */
  }
  const t0 = performance.now();
  await s.producer.enqueue({ i });
  const w = await s.rx.recv(AbortSignal.timeout(5000));
  const tw = performance.now();
  if (w === null) throw new Error(`${s.name}: no wake within 5 s`);
  const jobs = await s.consumer.claimBatch(10, 'w');
  const t1 = performance.now();
  if (jobs.length !== 1) throw new Error(`${s.name}: claimed ${jobs.length} jobs after the wake, expected 1`);
  await s.consumer.ackBatch(jobs);
  if (record) {
    s.wake.push(tw - t0);
    s.claimed.push(t1 - t0);
  }
}

async function bare(listener: pg.Client, sender: pg.Client, i: number): Promise<number> {
  const got = new Promise<void>((res) => listener.once('notification', () => res()));
  const t0 = performance.now();
  await sender.query(`SELECT pg_notify('abwake_bare', $1)`, [String(i)]);
  await got;
  return performance.now() - t0;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

const [openA, openB] = await Promise.all([loadOpen(dirA), loadOpen(dirB)]);
const tag = Date.now().toString(36);
const a = await side('A', openA, tag);
const b = await side('B', openB, tag);
const listener = new pg.Client({ connectionString: PG_URL });
const sender = new pg.Client({ connectionString: PG_URL });
await listener.connect();
await sender.connect();
await listener.query('LISTEN abwake_bare');
const bareMs: number[] = [];
try {
  for (let i = 0; i < 10; i++) for (const s of [a, b]) await sample(s, i, false);
  for (let i = 0; i < SAMPLES; i++) {
    const order = i % 2 === 0 ? [a, b] : [b, a];
    for (const s of order) {
      await sleep(2 + Math.random() * 8);
      await sample(s, i, true);
    }
    await sleep(2 + Math.random() * 8);
    bareMs.push(await bare(listener, sender, i));
  }
  const bp50 = pct(bareMs, 50);
  const line = (s: Side): string =>
    `${s.name}: enqueue→wake p50 ${pct(s.wake, 50).toFixed(2)} ms (p95 ${pct(s.wake, 95).toFixed(2)}), enqueue→claimed p50 ${pct(s.claimed, 50).toFixed(2)} ms (p95 ${pct(s.claimed, 95).toFixed(2)}), claimed p50 / bare NOTIFY p50 ${(pct(s.claimed, 50) / bp50).toFixed(2)}x`;
  process.stdout.write(
    [
      `A = ${resolve(dirA)}`,
      `B = ${resolve(dirB)}`,
      `${SAMPLES} samples per side, alternating ABBA, ${CROSS ? 'receiver and claim on a second store (cross-process view)' : 'producer, receiver and claim on one store (B3 setting)'}`,
      `bare pg_notify → LISTEN p50 ${bp50.toFixed(2)} ms (p95 ${pct(bareMs, 95).toFixed(2)})`,
      line(a),
      line(b),
      `B/A enqueue→claimed p50 ${(pct(b.claimed, 50) / pct(a.claimed, 50)).toFixed(3)}, enqueue→wake p50 ${(pct(b.wake, 50) / pct(a.wake, 50)).toFixed(3)}`,
      '',
    ].join('\n'),
  );
} finally {
  a.rx.close();
  b.rx.close();
  for (const s of [a, b]) for (const st of s.stores) await st.close();
  await listener.end();
  for (const schema of schemas) await sender.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await sender.end();
}
