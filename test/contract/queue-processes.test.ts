import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, PG_URL, withEngineDb, type EngineDb, type EngineFixture } from '../helpers/engines.js';

const CHILD = fileURLToPath(new URL('./fixtures/queue-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Child {
  ready: Promise<void>;
  start(): void;
  result: Promise<unknown>;
}

function child(engine: EngineFixture, db: EngineDb, mode: string, queue: string): Child {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', CHILD, engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-', mode, queue],
    {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('"ready":true')) markReady();
  });
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const result = new Promise<unknown>((resolve, reject) => {
    proc.on('exit', (code) => {
      markReady();
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !last.includes('"result"'))
        return reject(new Error(`child exited with ${code}: ${err || out}`));
      resolve((JSON.parse(last) as { result: unknown }).result);
    });
  });
  return { ready, start: () => proc.stdin.end('go\n'), result };
}

async function startAll(children: Child[]): Promise<unknown[]> {
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.start();
  return Promise.all(children.map((c) => c.result));
}

for (const engine of contractEngines()) {
  describe(`queue features across processes [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('20 enqueuers of one unique key in separate transactions across 4 processes create exactly one job', async () => {
      const ids = (
        await startAll(Array.from({ length: 4 }, () => child(engine, db, 'unique', 'unique-procs')))
      ).flat() as number[];
      expect(ids).toHaveLength(20);
      expect(new Set(ids).size).toBe(1);
      expect((await store.queue('unique-procs').stats()).pending).toBe(1);
      expect((await store.queue('unique-procs').getJobByKey('once'))!.id).toBe(ids[0]);
    }, 120_000);

    it('3 processes claiming a rate-limited queue stay within the cap in every window', async () => {
      const q = store.queue('rated');
      const max = 8;
      const perMs = 400;
      await q.enqueueMany(Array.from({ length: 60 }, (_, i) => i));
      await q.setRateLimit({ max, perMs });
      const starts = (await startAll(
        Array.from({ length: 3 }, () => child(engine, db, 'rate', 'rated')),
      )) as number[][];
      const all = starts.flat();
      expect(all).toHaveLength(60);
      // Several processes took part, or the test proves nothing about the shared window.
      expect(starts.filter((s) => s.length > 0).length).toBeGreaterThan(1);
      const perWindow = new Map<number, number>();
      for (const t of all) perWindow.set(Math.floor(t / perMs), (perWindow.get(Math.floor(t / perMs)) ?? 0) + 1);
      // Each claim counts against the window its start lies in, so every window holds at most max.
      expect(Math.max(...perWindow.values())).toBeLessThanOrEqual(max);
      expect(perWindow.size).toBeGreaterThanOrEqual(Math.ceil(60 / max));
    }, 120_000);
  });
}
