import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import type { Store } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger } from '../nest/nest-fixtures.js';
import { clusterUnavailable, startCluster, type PgCluster } from './pg-cluster.js';
import { describeCluster, reportFigures, sleep } from './fault-helpers.js';

// Fault suite (test/fault/README.md): the connections between the store and PostgreSQL are cut
// (every backend of the store's database terminated, pool, held and LISTEN connections alike)
// again and again while the store enqueues, claims and acks. PostgreSQL-only; on a private
// cluster (pg-cluster.ts), never on the shared server other test files use.

const JOBS = 600;
const CUTS = 8;
// The production is cut into segments; segment k+1 waits for cut k, so a fast producer cannot
// finish before every cut has happened (a CI run once produced all 600 jobs before the 8th cut).
const SEGMENT = JOBS / (CUTS + 2);

describeCluster(clusterUnavailable(), 'fault: a network cut between the store and PostgreSQL', () => {
  let cluster: PgCluster | undefined;
  let store: Store | undefined;
  let killer: pg.Client | undefined;
  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => {
    await store?.close().catch(() => undefined);
    await killer?.end().catch(() => undefined);
    cluster?.destroy();
  }, 60_000);

  it(`every backend terminated ${CUTS} times while ${JOBS} jobs are enqueued, claimed and acked: none lost, each cut recovered`, async () => {
    const c = cluster!;
    const logger = new MemoryLogger();
    store = await openPostgresStore({ connectionString: c.url, schema: 'fault_cut', logger, wakeFallbackMs: 250 });
    killer = new pg.Client({ connectionString: c.url });
    killer.on('error', () => undefined);
    await killer.connect();
    const q = store.queue('cut', { leaseMs: 3_000 });

    const cuts: number[] = [];
    // seq → ids its enqueue returned (a retried enqueue whose first try committed unseen adds one).
    const enqueued = new Map<number, number>();
    const handledSeq = new Map<number, number>();
    const handledAt: number[] = [];
    const enqueuedAt: number[] = [];
    let enqueueErrors = 0;
    const worker = new QueueWorker({
      queue: q,
      name: 'fault cut',
      concurrency: 8,
      workerId: 'fault-cut',
      logger,
      idlePollIntervalMs: 250,
      drainTimeoutMs: 5_000,
      handler: async (job) => {
        const seq = (job.payload as { seq: number }).seq;
        handledSeq.set(seq, (handledSeq.get(seq) ?? 0) + 1);
        handledAt.push(performance.now());
        await sleep(2);
      },
    });
    worker.start();

    // The producer: one enqueue at a time, each retried until it succeeds (the unique key makes a
    // retry after an unseen commit return the same job while it is live).
    let producing = true;
    const producer = (async () => {
      for (let seq = 0; seq < JOBS; seq++) {
        const deadline = performance.now() + 60_000;
        while (cuts.length < Math.min(CUTS, Math.floor(seq / SEGMENT) - 1) && performance.now() < deadline)
          await sleep(5);
        for (;;) {
          try {
            enqueued.set(seq, await q.enqueue({ seq }, { uniqueKey: `seq-${seq}` }));
            enqueuedAt.push(performance.now());
            break;
          } catch {
            enqueueErrors += 1;
            await sleep(10);
          }
        }
        if (seq % 4 === 0) await sleep(1); // spread the production over the cuts
      }
      producing = false;
    })();

    // The cuts, each once the system has made progress since the last one.
    const recoveries: { enqueueMs: number; handleMs: number }[] = [];
    for (let i = 0; i < CUTS && producing; i++) {
      await waitFor('progress before the next cut', () => enqueuedAt.length > (i + 1) * SEGMENT || !producing, 30_000);
      if (!producing) break;
      const r = await killer.query<{ n: string }>(
        `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );
      const at = performance.now();
      cuts.push(Number(r.rows[0]!.n));
      const e = await waitFor(
        'an enqueue after the cut',
        () => enqueuedAt.find((t) => t > at) ?? (producing ? null : at),
        30_000,
      );
      const h = await waitFor('a handled job after the cut', () => handledAt.find((t) => t > at) ?? null, 30_000);
      recoveries.push({ enqueueMs: e - at, handleMs: h - at });
    }
    await producer;

    await waitFor(
      'every enqueued job to be handled and the queue empty',
      async () => {
        for (const seq of enqueued.keys()) if (!handledSeq.has(seq)) return false;
        const st = await q.stats().catch(() => null);
        return st !== null && st.pending + st.processing === 0;
      },
      45_000,
    );
    await worker.stop();

    const lost = [...enqueued.keys()].filter((seq) => !handledSeq.has(seq));
    const duplicates = [...handledSeq.values()].reduce((n, k) => n + k - 1, 0);
    expect(cuts.length).toBe(CUTS);
    // Each cut ended the store's connections (pool, held, LISTEN): at least one backend each time.
    expect(cuts.every((n) => n >= 1)).toBe(true);
    expect(enqueued.size).toBe(JOBS);
    expect(lost).toEqual([]);
    expect((await q.stats()).dead).toBe(0);
    reportFigures('pg network cut', {
      jobs: JOBS,
      cuts: cuts.length,
      backendsTerminated: cuts.reduce((a, b) => a + b, 0),
      enqueueErrors,
      maxEnqueueRecoveryMs: Math.round(Math.max(...recoveries.map((r) => r.enqueueMs))),
      maxHandleRecoveryMs: Math.round(Math.max(...recoveries.map((r) => r.handleMs))),
      medianHandleRecoveryMs: Math.round(
        recoveries.map((r) => r.handleMs).sort((a, b) => a - b)[Math.floor(recoveries.length / 2)]!,
      ),
      lost: lost.length,
      duplicates,
    });
  });
});
