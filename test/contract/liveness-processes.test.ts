import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { InvalidOption } from '../../lib/contract/errors.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { contractEngines, PG_URL, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';
import { spawnStoreChild } from '../helpers/store-child.js';

// Dead worker detection (docs/semantics.md, Leases, "Dead workers"): the worker process of
// fixtures/liveness-child.ts holds one job under a 60 s lease.
const CHILD = fileURLToPath(new URL('./fixtures/liveness-child.ts', import.meta.url));
const LEASE_MS = 60_000;

for (const engine of contractEngines()) {
  describe(`dead worker detection across processes [${engine.name}]`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    it('a worker SIGKILLed mid-job: another process runs the job long before its 60 s lease ends; the attempt is lapsed', async () => {
      const name = 'liveness-crash';
      const q = store.queue(name, { leaseMs: LEASE_MS, maxAttempts: 3 });
      const id = await q.enqueue({ n: 1 });
      const child = spawnStoreChild(CHILD, engine, db, [name, 'hang'], 'liveness hang');
      try {
        await child.ready;
        child.send();
        await waitFor('the child started the job', () => child.events.some((e) => e.start === id), 60_000, 20);
        child.proc.kill('SIGKILL');
        await child.exited;
        // This store claims as a worker of its own (so it sweeps): the job comes back far below the lease.
        const job = await waitFor('the take-over', () => q.claimOne('rescuer'), 15_000, 50);
        expect([job.id, job.attempts]).toEqual([id, 2]);
        const detail = (await store.admin().jobDetail(name, id))!;
        expect(detail.failedAttempts.map((a) => [a.attempt, a.workerId, a.outcome, a.error])).toEqual([
          [1, `probe-${child.proc.pid}`, 'lapsed', null],
        ]);
        // Ended by the sweep, not by the lease.
        const a = detail.failedAttempts[0]!;
        expect(a.endedAt).toBeGreaterThanOrEqual(a.claimedAt!);
        expect(a.endedAt).toBeLessThan(a.claimedAt! + LEASE_MS);
        expect(await job.ack()).toBe(true);
      } finally {
        if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
      }
    }, 120_000);

    it('a live worker whose event loop is blocked for many sweep intervals keeps its job and acks it', async () => {
      const name = 'liveness-blocked';
      const q = store.queue(name, { leaseMs: LEASE_MS, maxAttempts: 3 });
      const id = await q.enqueue({ n: 1 });
      const child = spawnStoreChild(CHILD, engine, db, [name, 'block'], 'liveness block');
      try {
        await child.ready;
        child.send();
        await waitFor('the child started the job', () => child.events.some((e) => e.start === id), 60_000, 20);
        // While the child is blocked (3 s, about 7 sweep intervals), this store claims and sweeps: nothing comes back.
        let claims = 0;
        await waitFor(
          'the child back from its block',
          async () => {
            const taken = await q.claimOne('rescuer');
            claims += 1;
            expect(taken).toBeNull();
            return child.events.some((e) => e.after === id);
          },
          30_000,
          50,
        );
        expect(claims).toBeGreaterThan(1);
        expect(child.events.find((e) => e.after === id)!.ok).toBe(true);
        // Its ack lands: the job is gone (nothing to record), after one attempt and no failed one.
        await waitFor('the ack', async () => (await q.getJob(id)) === null, 15_000, 20);
        expect((await store.admin().jobDetail(name, id))?.failedAttempts ?? []).toEqual([]);
        child.send('stop');
        await child.exited;
      } finally {
        if (child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
      }
    }, 120_000);
  });
}

describe('the workerLiveness option', () => {
  it('is refused before any I/O when it is not a boolean, naming it', async () => {
    for (const open of [
      () => openSqliteStore({ path: '/nonexistent-dir/x.db', workerLiveness: 'yes' as unknown as boolean }),
      () => openPostgresStore({ connectionString: PG_URL, workerLiveness: 1 as unknown as boolean }),
    ]) {
      const err = await open().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidOption);
      expect(String(err)).toContain('workerLiveness');
    }
  });
});
