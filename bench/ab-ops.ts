/**
 * Fine-grained A/B of two checkouts in ONE process: both libraries are loaded
 * side by side, each opens its own fresh store per engine, and the two sides
 * alternate in small chunks (A, B, B, A, …), so a burst of load on the shared
 * machine lands on both. Measures the plain path of B1 (single enqueues) and
 * B2 (claimBatch(10) + ackBatch drain of pre-enqueued jobs).
 *
 *   npx -y tsx bench/ab-ops.ts <dirA> <dirB> [chunks=40] [chunkSize=50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { loadOpen, PG_URL, type Open } from './lib/ab-checkout.js';
import type { Queue, Store } from '../lib/contract/types.js';

const [dirA, dirB, chunksArg, sizeArg] = process.argv.slice(2);
if (!dirA || !dirB) throw new Error('usage: ab-ops.ts <dirA> <dirB> [chunks] [chunkSize]');
const CHUNKS = Number(chunksArg ?? 40);
const SIZE = Number(sizeArg ?? 50);

interface Side {
  name: 'A' | 'B';
  store: Store;
  q: Queue;
  ms: { enqueue: number; drain: number };
}

async function side(
  name: 'A' | 'B',
  open: Open,
  engine: 'sqlite' | 'postgres',
  tag: string,
  cleanup: (() => Promise<void>)[],
): Promise<Side> {
  let store: Store;
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `alk-abops-${name}-`));
    store = await open({ url: `sqlite:${join(dir, 'store.db')}` });
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }));
  } else {
    const schema = `abops_${name.toLowerCase()}_${tag}`;
    store = await open({ url: PG_URL, schema });
    cleanup.push(async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    });
  }
  return { name, store, q: store.queue('ab'), ms: { enqueue: 0, drain: 0 } };
}

async function timed(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function run(engine: 'sqlite' | 'postgres', openA: Open, openB: Open): Promise<string[]> {
  const cleanup: (() => Promise<void>)[] = [];
  const tag = Date.now().toString(36);
  const a = await side('A', openA, engine, tag, cleanup);
  const b = await side('B', openB, engine, tag, cleanup);
  try {
    for (const s of [a, b]) for (let i = 0; i < 20; i++) await s.q.enqueue({ warm: i });
    for (const s of [a, b])
      for (;;) {
        const js = await s.q.claimBatch(10, 'w');
        if (js.length === 0) break;
        await s.q.ackBatch(js);
      }
    for (let c = 0; c < CHUNKS; c++) {
      const order = c % 2 === 0 ? [a, b] : [b, a];
      for (const s of order)
        s.ms.enqueue += await timed(async () => {
          for (let i = 0; i < SIZE; i++) await s.q.enqueue({ i, kind: 'ab' });
        });
    }
    for (let c = 0; c < CHUNKS; c++) {
      const order = c % 2 === 0 ? [a, b] : [b, a];
      for (const s of order) {
        s.ms.drain += await timed(async () => {
          let left = SIZE;
          while (left > 0) {
            const js = await s.q.claimBatch(Math.min(10, left), 'w');
            if (js.length === 0) throw new Error(`${s.name}: queue ran dry`);
            left -= js.length;
            await s.q.ackBatch(js);
          }
        });
      }
    }
    const n = CHUNKS * SIZE;
    const per = (ms: number): string => `${Math.round((n * 1000) / ms)}/s`;
    return [
      `${engine} B1-path enqueue: A ${per(a.ms.enqueue)}, B ${per(b.ms.enqueue)}, B/A ${(a.ms.enqueue / b.ms.enqueue).toFixed(3)}`,
      `${engine} B2-path claimBatch(10)+ackBatch: A ${per(a.ms.drain)}, B ${per(b.ms.drain)}, B/A ${(a.ms.drain / b.ms.drain).toFixed(3)}`,
    ];
  } finally {
    await a.store.close();
    await b.store.close();
    for (const c of cleanup) await c();
  }
}

const [openA, openB] = await Promise.all([loadOpen(dirA), loadOpen(dirB)]);
const lines = [
  `A = ${resolve(dirA)}`,
  `B = ${resolve(dirB)}`,
  `chunks ${CHUNKS} x ${SIZE} ops per side, alternating ABBA`,
];
for (const engine of ['sqlite', 'postgres'] as const) lines.push(...(await run(engine, openA, openB)));
process.stdout.write(`${lines.join('\n')}\n`);
