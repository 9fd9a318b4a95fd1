import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';

const WORKER = fileURLToPath(new URL('./fixtures/claim-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Starts the worker process; resolves once it is connected, and gives its final output. */
function startWorker(schema: string, queue: string): { ready: Promise<void>; done: Promise<number[]> } {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, PG_URL, schema, queue], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('ready\n')) markReady();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<number[]>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      markReady();
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.startsWith('{')) return reject(new Error(`worker exited with ${code}: ${err || out}`));
      resolve((JSON.parse(last) as { acked: number[] }).acked);
    });
  });
  return { ready, done };
}

describePg('postgres claims across processes', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('the worker fixture runs as an ESM TypeScript process under tsx', async () => {
    const w = startWorker(db.location, 'empty-queue');
    await expect(w.done).resolves.toEqual([]);
  });

  it('hands each job to exactly one of two processes', async () => {
    const total = 1500;
    const q = store.queue('shared');
    const ids = await q.enqueueMany(Array.from({ length: total }, (_, i) => ({ i })));
    const worker = startWorker(db.location, 'shared');
    await worker.ready;
    const mine: number[] = [];
    for (;;) {
      const jobs = await q.claimBatch(1 + Math.floor(Math.random() * 16), 'parent');
      if (jobs.length === 0) {
        const s = await q.stats();
        if (s.pending === 0 && s.processing === 0) break;
        await new Promise((r) => setTimeout(r, 5));
        continue;
      }
      for (const j of jobs) if (await j.ack()) mine.push(j.id);
    }
    const theirs = await worker.done;
    const all = [...mine, ...theirs];
    expect(new Set(all).size).toBe(all.length); // nobody acked a job twice
    expect([...all].sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
    // Both processes actually took part (otherwise the test proves nothing about concurrency).
    expect(mine.length).toBeGreaterThan(0);
    expect(theirs.length).toBeGreaterThan(0);
    expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
  }, 120_000);
});
