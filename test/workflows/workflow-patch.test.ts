import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { createWorkflows, type Workflows } from '../../lib/workflows/index.js';
import {
  contractEngines,
  PG_URL,
  waitFor,
  withEngineDb,
  type EngineDb,
  type EngineFixture,
} from '../helpers/engines.js';
import { PATCH_NAMESPACE, patchyWorkflow, type PatchyResult } from './fixtures/patch-workflow.js';

// The upgrade proof: a run started on the old code is parked (its middle step journaled) when its
// worker process is SIGKILLed; a worker process on the new code, where that step sits behind
// ctx.patched, resumes it through the old branch, while a run started on the new code takes the new one.

const WORKER = fileURLToPath(new URL('./fixtures/patch-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function spawnWorker(
  engine: EngineFixture,
  db: EngineDb,
  code: 'old' | 'new',
): { proc: ChildProcess; ready: Promise<void> } {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', WORKER, engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-', code],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"ready":true')) resolve();
    });
    proc.once('exit', (code, signal) => reject(new Error(`worker exited early (${code ?? signal})`)));
  });
  proc.stderr!.on('data', () => undefined);
  return { proc, ready };
}

async function untilWaiting(w: Workflows, id: string): Promise<void> {
  await waitFor(`run ${id} waiting`, async () => (await w.getStatus(id))?.steps.some((s) => s.state === 'waiting'));
}

function stop(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGKILL');
  });
}

for (const engine of contractEngines()) {
  describe(`ctx.patched across a code upgrade [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('a run started before the patch replays through the old branch after a restart on the new code; a new run takes the new one', async () => {
      const w = createWorkflows(store, {
        workflows: [patchyWorkflow('new')],
        namespace: PATCH_NAMESPACE,
        worker: false,
      });
      const old = spawnWorker(engine, db, 'old');
      let current = old;
      try {
        await old.ready;
        const before = (await w.start('patchy', null, { id: 'before-patch' })).id;
        await untilWaiting(w, before);
        await stop(old.proc);
        current = spawnWorker(engine, db, 'new');
        await current.ready;
        const after = (await w.start('patchy', null, { id: 'after-patch' })).id;
        await untilWaiting(w, after);
        await w.signal(before, 'go', 'b');
        await w.signal(after, 'go', 'a');
        await expect(w.waitForResult<PatchyResult>(before, { timeoutMs: 30_000 })).resolves.toEqual({
          branch: 'old',
          go: 'b',
        });
        await expect(w.waitForResult<PatchyResult>(after, { timeoutMs: 30_000 })).resolves.toEqual({
          branch: 'new',
          go: 'a',
        });
        const shape = async (id: string) =>
          (await w.getStatus(id))!.steps.map((s) => [s.position, s.kind, s.name, s.state]);
        expect(await shape(before)).toEqual([
          [0, 'step', 'a', 'done'],
          [1, 'step', 'charge', 'done'],
          [2, 'signal', 'go', 'done'],
        ]);
        expect(await shape(after)).toEqual([
          [0, 'step', 'a', 'done'],
          [1, 'patch', 'charge-v2', 'done'],
          [2, 'step', 'charge-v2', 'done'],
          [3, 'signal', 'go', 'done'],
        ]);
      } finally {
        await stop(current.proc);
        await w.close();
      }
    }, 120_000);
  });
}
