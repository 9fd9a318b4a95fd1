import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { contractEngines, PG_URL, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';

// The worker process of test/contract/results-processes.test.ts: prints {"start":id} when a slow job's handler starts.
const CHILD = fileURLToPath(new URL('./fixtures/results-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

for (const engine of contractEngines()) {
  describe(`job attempts across processes [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('a worker process SIGKILLed mid-job: the claim that takes the job over records its attempt as lapsed with that worker id', async () => {
      const name = 'attempts-crash';
      const q = store.queue(name, { leaseMs: 1000, maxAttempts: 3 });
      const id = await q.enqueue({ n: 1, slow: true });
      const env = { ...process.env };
      delete env.NODE_OPTIONS;
      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', CHILD, engine.kind, db.location, engine.kind === 'postgres' ? PG_URL : '-', name],
        { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let out = '';
      proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
      try {
        await waitFor('the child ready', () => out.includes('"ready":true'), 60_000, 20);
        proc.stdin!.write('go\n');
        await waitFor('the child started the job', () => out.includes(`{"start":${id}}`), 60_000, 20);
        proc.kill('SIGKILL');
        await exited;
        // The dead worker sweep (or the lease, whichever comes first) ends the claim; this store's claim takes the job over.
        const job = await waitFor('the take-over', () => q.claimOne('rescuer'), 30_000, 50);
        expect([job.id, job.attempts]).toEqual([id, 2]);
        const detail = (await store.admin().jobDetail(name, id))!;
        expect(detail.failedAttempts.map((a) => [a.attempt, a.workerId, a.outcome, a.error])).toEqual([
          [1, `probe-${proc.pid}`, 'lapsed', null],
        ]);
        // Ended at the lease's end at the latest (docs/semantics.md, Leases, "Dead workers").
        const a = detail.failedAttempts[0]!;
        expect(a.endedAt).toBeGreaterThanOrEqual(a.claimedAt!);
        expect(a.endedAt).toBeLessThanOrEqual(a.claimedAt! + 1000);
        await job.ack();
      } finally {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      }
    }, 120_000);
  });
}
