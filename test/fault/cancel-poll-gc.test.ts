import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { contractEngines, PG_URL, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';
import { reportFigures } from './fault-helpers.js';

// The worker's cancel poll is the bound when a cancel wake is lost: it must keep firing after the
// garbage collector runs. Each case runs a worker in a child process started with --expose-gc
// (test/fault/fixtures/cancel-poll-gc-child.ts) that collects garbage between every two polls.

const CHILD = fileURLToPath(new URL('./fixtures/cancel-poll-gc-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Events the child printed, as parsed JSON lines, and its exit. */
function runChild(
  kind: string,
  db: EngineDb,
  queue: string,
  mode: 'no-listener' | 'lost-wake',
): { events: Record<string, unknown>[]; exited: Promise<number | null>; kill: () => void; stderr: () => string } {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const proc = spawn(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', CHILD, kind, db.location, kind === 'postgres' ? PG_URL : '-', queue, mode],
    { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const events: Record<string, unknown>[] = [];
  let buf = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line.startsWith('{')) events.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  return { events, exited, kill: () => proc.kill('SIGKILL'), stderr: () => err };
}

for (const engine of contractEngines()) {
  describe(`cancel poll under garbage collection [${engine.name}]`, () => {
    let db!: EngineDb;
    withEngineDb(engine, (d) => (db = d));

    for (const mode of ['no-listener', 'lost-wake'] as const) {
      it(`${mode}: a job cancelled without a wake is aborted by the poll, with gc() between polls`, async () => {
        const child = runChild(engine.kind, db, `gc-${mode}`, mode);
        try {
          const cancelled = await waitFor(
            'the child to cancel its running job',
            () => child.events.find((e) => typeof e.cancelled === 'number'),
            30_000,
            20,
          );
          expect(cancelled.returned).toBe(true);
          // Generous: the poll is every 200 ms; without a poll the handler never aborts.
          const aborted = await waitFor(
            'the cancelled handler to abort',
            () => child.events.find((e) => e.aborted === cancelled.cancelled),
            15_000,
            20,
          );
          expect(aborted.reason).toBe('JobCancelled');
          expect(await child.exited).toBe(0);
          const end = child.events.find((e) => typeof e.gcs === 'number');
          expect(end?.gcs).toBeGreaterThan(0);
          reportFigures(`cancel poll under gc [${engine.name}] ${mode}`, {
            gcs: end!.gcs as number,
            cancelToAbortMs: end!.cancelToAbortMs as number,
          });
        } catch (err) {
          child.kill();
          throw new Error(`${String(err)}\nchild stderr: ${child.stderr()}`);
        }
      }, 60_000);
    }
  });
}
