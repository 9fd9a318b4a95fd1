import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger } from '../nest/nest-fixtures.js';
import { clusterUnavailable, startCluster, type PgCluster } from './pg-cluster.js';
import { describeCluster, reportFigures, sleep } from './fault-helpers.js';

// Fault suite (test/fault/README.md): a PostgreSQL server restarted under a draining worker.
// PostgreSQL-only by nature (SQLite has no server); runs on a private cluster (pg-cluster.ts).

const JOBS = 2_000;

describeCluster(clusterUnavailable(), 'fault: a PostgreSQL server restart mid-drain', () => {
  let cluster: PgCluster | undefined;
  const stores: Store[] = [];
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => undefined);
    cluster?.destroy();
  }, 60_000);

  it(`${JOBS} jobs drain through a QueueWorker across a crash restart: none lost, LISTEN back, the store recovers by itself`, async () => {
    const c = cluster!;
    const logger = new MemoryLogger();
    const schema = 'fault_restart';
    const store = await openPostgresStore({ connectionString: c.url, schema, logger, wakeFallbackMs: 250 });
    stores.push(store);
    // Another process's view: its enqueue after the restart, and its notify to prove LISTEN is back.
    const other = await openPostgresStore({ connectionString: c.url, schema, logger: new MemoryLogger() });
    stores.push(other);
    // A short lease, so a job whose ack was lost in the crash comes back within the test.
    const q = store.queue('drain', { leaseMs: 3_000 });
    const ids: number[] = [];
    for (let i = 0; i < JOBS; i += 500)
      ids.push(...(await q.enqueueMany(Array.from({ length: 500 }, (_, j) => ({ n: i + j })))));
    const wakes = store.listen('fault-restart');

    const handled = new Map<number, number>();
    const handledAt = new Map<number, number>();
    let upAt = Infinity;
    let firstClaimAfterUp: number | null = null;
    const worker = new QueueWorker({
      queue: q,
      name: 'fault drain',
      concurrency: 8,
      workerId: 'fault-restart',
      logger,
      idlePollIntervalMs: 250,
      drainTimeoutMs: 5_000,
      // The first claim that returns jobs after the server is back: the worker has recovered.
      observers: [
        {
          claimed: (n) =>
            void (
              n > 0 &&
              firstClaimAfterUp === null &&
              performance.now() > upAt &&
              (firstClaimAfterUp = performance.now())
            ),
        },
      ],
      handler: async (job) => {
        handled.set(job.id, (handled.get(job.id) ?? 0) + 1);
        if (!handledAt.has(job.id)) handledAt.set(job.id, performance.now());
        await sleep(5); // a little work, so the restart lands mid-drain
      },
    });
    worker.start();
    try {
      await waitFor('a quarter of the jobs to be handled', () => handled.size >= JOBS / 4, 30_000);
      const cutAt = performance.now();
      await c.restart('immediate');
      upAt = performance.now();
      const handledBefore = handled.size;
      expect(handledBefore).toBeLessThan(JOBS); // the restart really was mid-drain

      // LISTEN back: the receiver hears the reconnect, then a notify sent by another store after the restart.
      const reconnected = await waitFor(
        'the reconnect wake',
        async () => {
          const w = await wakes.recv(AbortSignal.timeout(500)).catch(() => null);
          return w?.channel === '__alkstore_listener_reconnected__' ? w : null;
        },
        30_000,
      );
      expect(reconnected.channel).toBe('__alkstore_listener_reconnected__');
      const listenBack = await waitFor(
        'a notify from another store after the restart',
        async () => {
          await other.notify('fault-restart').catch(() => undefined);
          const w = await wakes.recv(AbortSignal.timeout(200)).catch(() => null);
          return w?.channel === 'fault-restart' ? performance.now() : null;
        },
        30_000,
      );

      const claimBack = await waitFor('the worker to claim again', () => firstClaimAfterUp, 30_000);
      // A job enqueued after the restart, ahead of the backlog, is handled by the untouched worker.
      const probe = await waitFor(
        'an enqueue after the restart',
        () =>
          other
            .queue('drain')
            .enqueue({ probe: true }, { priority: 10 })
            .catch(() => null),
        30_000,
      );
      const probeHandled = await waitFor(
        'the worker to handle the job enqueued after the restart',
        () => handledAt.get(probe) ?? null,
        30_000,
      );
      const drainStart = performance.now();

      await waitFor(
        'every job to be handled and the queue empty',
        async () => {
          if (ids.some((id) => !handled.has(id))) return false;
          const st = await q.stats().catch(() => null);
          return st !== null && st.pending + st.processing === 0;
        },
        45_000,
      );
      const lost = ids.filter((id) => !handled.has(id));
      const duplicates = [...handled.values()].reduce((n, k) => n + k - 1, 0);
      expect(lost).toEqual([]);
      expect((await q.stats()).dead).toBe(0);
      reportFigures('pg restart mid-drain', {
        jobs: JOBS,
        handledBeforeRestart: handledBefore,
        serverDownMs: Math.round(upAt - cutAt),
        listenBackMs: Math.round(listenBack - upAt),
        firstClaimMs: Math.round(claimBack - upAt),
        newJobHandledMs: Math.round(probeHandled - upAt),
        restDrainedMs: Math.round(performance.now() - drainStart),
        lost: lost.length,
        duplicates,
      });
    } finally {
      await worker.stop();
      wakes.close();
    }
  });
});
