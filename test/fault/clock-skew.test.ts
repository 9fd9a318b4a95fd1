import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import {
  contractEngines,
  PG_URL,
  waitFor,
  withEngineDb,
  type EngineDb,
  type EngineFixture,
} from '../helpers/engines.js';

const WORKER = fileURLToPath(new URL('./fixtures/skew-worker.ts', import.meta.url));
const CLOCK = fileURLToPath(new URL('./fixtures/skew-clock.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const TEN_MINUTES = 10 * 60_000;
/** The queue's stamped visibility timeout: each handler run outlives it several times over. */
const LEASE_MS = 1_200;
const HANDLER_MS = 3_000;
const JOBS = 8;

interface SkewedWorker {
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  readonly proc: ChildProcessWithoutNullStreams;
  output(): string;
}

function spawnWorker(
  engine: EngineFixture,
  db: EngineDb,
  queue: string,
  skewMs: number,
  workerId: string,
): SkewedWorker {
  const env: NodeJS.ProcessEnv = { ...process.env, ALKSTORE_TEST_SKEW_MS: String(skewMs) };
  delete env.NODE_OPTIONS;
  const args = [
    '--import',
    'tsx',
    '--import',
    CLOCK,
    WORKER,
    engine.kind,
    db.location,
    engine.kind === 'postgres' ? PG_URL : '-',
    queue,
    String(HANDLER_MS),
    workerId,
  ];
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('"ready":true')) markReady();
  });
  proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      markReady();
      resolve(code);
    }),
  );
  return { ready, exited, proc, output: () => out };
}

/** Runs recorded by the workers (one stream event per handler start), by job id. */
async function runsByJob(store: Store, queue: string): Promise<Map<number, string[]>> {
  const byJob = new Map<number, string[]>();
  let after = 0;
  for (;;) {
    const page = await store.stream(`${queue}-runs`).readSince(after, 1000);
    if (page.length === 0) return byJob;
    for (const e of page) {
      const p = e.payload as { job: number; worker: string; attempt: number };
      byJob.set(p.job, [...(byJob.get(p.job) ?? []), `${p.worker}#${p.attempt}`]);
      after = e.offset;
    }
  }
}

for (const engine of contractEngines()) {
  describe(`clock skew between workers and the database [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('workers whose clocks are 10 minutes ahead and 10 minutes behind drain a queue with leases shorter than their handlers; no job runs twice', async () => {
      const queue = 'skewed';
      const q = store.queue(queue, { leaseMs: LEASE_MS, maxAttempts: 10 });
      const workers = [
        spawnWorker(engine, db, queue, TEN_MINUTES, 'ahead'),
        spawnWorker(engine, db, queue, -TEN_MINUTES, 'behind'),
      ];
      try {
        await Promise.all(workers.map((w) => w.ready));
        for (const w of workers) expect(w.output()).toContain('"ready":true');
        const ids = await q.enqueueMany(Array.from({ length: JOBS }, (_, i) => i));
        // Each job runs HANDLER_MS; 4 slots in all: about HANDLER_MS * JOBS / 4, generously bounded.
        // Done when every job is acked, or as soon as one job has run twice (the failure this test looks for).
        await waitFor(
          'every job acked (or a job run twice)',
          async () => {
            const s = await q.stats();
            if (s.pending === 0 && s.processing === 0) return true;
            return [...(await runsByJob(store, queue)).values()].some((r) => r.length > 1);
          },
          90_000,
          50,
        );
        const runs = await runsByJob(store, queue);
        expect([...runs.keys()].sort((a, b) => a - b)).toEqual(ids);
        const twice = [...runs].filter(([, r]) => r.length > 1).map(([id, r]) => `job ${id}: ${r.join(', ')}`);
        expect(twice).toEqual([]);
        // Both skewed workers took part, or the test proves nothing about one of the two directions.
        const by = new Set([...runs.values()].flat().map((r) => r.split('#')[0]));
        expect([...by].sort()).toEqual(['ahead', 'behind']);
        expect((await q.stats()).dead).toBe(0);
      } finally {
        for (const w of workers) w.proc.kill('SIGTERM');
        await Promise.all(workers.map((w) => w.exited));
      }
    }, 150_000);
  });
}
