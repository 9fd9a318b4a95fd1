import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, PG_URL, withEngineDb, type EngineDb, type EngineFixture } from '../helpers/engines.js';

const CHILD = fileURLToPath(new URL('./fixtures/progress-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs the progress script to its end: its exit code, what it printed and its stderr. */
function runScript(
  engine: EngineFixture,
  db: EngineDb,
  queue: string,
  mode: 'return' | 'close',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', CHILD, engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-', queue, mode],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })));
}

for (const engine of contractEngines()) {
  describe(`progress of a short script [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('a script that awaits progress and closes its store exits 0 with the last value stored', async () => {
      const id = await store.queue('closing').enqueue(1);
      const run = await runScript(engine, db, 'closing', 'close');
      expect([run.code, run.stderr]).toEqual([0, '']);
      expect(JSON.parse(run.stdout)).toEqual({ claimed: id });
      expect((await store.queue('closing').getJob(id))?.progress).toBe('last');
    }, 60_000);

    // SQLite only: a PostgreSQL store's connections hold the process open until it is closed.
    (engine.kind === 'sqlite' ? it : it.skip)(
      'a script that awaits progress and returns without closing exits 0 once the last value is stored',
      async () => {
        const id = await store.queue('returning').enqueue(1);
        const run = await runScript(engine, db, 'returning', 'return');
        expect([run.code, run.stderr]).toEqual([0, '']);
        expect(JSON.parse(run.stdout)).toEqual({ claimed: id });
        expect((await store.queue('returning').getJob(id))?.progress).toBe('last');
      },
      60_000,
    );
  });
}
