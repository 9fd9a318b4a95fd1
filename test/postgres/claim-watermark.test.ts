import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import type { ClaimOpts, QueryRunnerLike, Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { FOLLOWING_CLAIM, nextDueOf } from '../../lib/internal/next-due.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { type EngineDb, PG_URL, describePg, postgres, waitFor } from '../helpers/engines.js';
import { explainAnalyzed, scanPagesOn, withClient } from './pg-helpers.js';

/** The claim options a worker core sends (`FOLLOWING_CLAIM`): such a claim may start after the watermark. */
const following: ClaimOpts & { [FOLLOWING_CLAIM]: true } = { [FOLLOWING_CLAIM]: true };

/**
 * PostgreSQL only: a worker's claim reads from where the store's last claim of the queue stopped
 * (`q_claim_after`, ClaimGate's watermark). It takes what a claim from the head would take of the
 * ready jobs after the watermark, higher priorities first, and a short one says when to come back.
 */
describePg('postgres claim watermark', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('claims after the watermark in claim order, a higher priority first, and a short claim is due back within the sweep', async () => {
    const q = store.queue('wm-order');
    const ids = await q.enqueueMany(Array.from({ length: 10 }, (_, i) => i));
    const first = await q.claimBatch(3, 'w', following);
    expect(first.map((j) => j.id)).toEqual(ids.slice(0, 3));
    const second = await q.claimBatch(3, 'w', following);
    expect(second.map((j) => j.id)).toEqual(ids.slice(3, 6));
    const urgent = await q.enqueue('urgent', { priority: 5 });
    const rest = await q.claimBatch(10, 'w', following);
    expect(rest.map((j) => j.id)).toEqual([urgent, ...ids.slice(6)]);
    const due = nextDueOf(rest);
    expect(typeof due).toBe('number');
    expect(due!).toBeLessThanOrEqual(1_000);
    expect(await q.ackBatch([...first, ...second, ...rest])).toBe(11);
  });

  it("a job this store's ack promotes (an ordering key's next, with its old run_at) is claimed by the next worker claim", async () => {
    const q = store.queue('wm-promote');
    const a = await q.enqueue('a', { orderingKey: 'k' });
    const b = await q.enqueue('b', { orderingKey: 'k' });
    const later = await q.enqueue('later');
    const [ja, jl] = await q.claimBatch(5, 'w', following);
    expect([ja?.id, jl?.id]).toEqual([a, later]);
    await ja!.ack();
    const next = await q.claimBatch(5, 'w', following);
    expect(next.map((j) => j.id)).toEqual([b]);
    await next[0]!.ack();
    await jl!.ack();
  });

  it('a job stamped before the watermark whose enqueue committed after the claim that moved it is taken by the next claim, not the sweep', async () => {
    const name = 'wm-late-commit';
    const q = store.queue(name);
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const runner = {
        active: true as boolean,
        get isTransactionActive(): boolean {
          return this.active;
        },
        query: (sql: string, params?: unknown[]) => client.query(sql, params),
      } satisfies QueryRunnerLike & { active: boolean };
      // A producer whose enqueue is stamped now and commits later (its commit waits for its fsync, or its transaction goes on).
      await client.query('BEGIN');
      const late = await store.joinTransaction(
        (body) => body({ queryRunner: runner, handle: runner }),
        (ops) => ops.enqueue(name, 'late'),
      );
      const stamped = (await client.query(`SELECT run_at::text AS r FROM "${db.location}".jobs WHERE id = $1`, [late]))
        .rows[0].r as string;
      await waitFor(
        "the clock to pass the late job's stamp",
        async () => (await store.now()) > Number(stamped) + 2,
        5_000,
        1,
      );
      // Another producer's later-stamped job commits first, and a worker's claim takes it: the watermark moves past `late`.
      const early = await q.enqueue('committed first');
      const first = await q.claimBatch(5, 'w', following);
      expect(first.map((j) => j.id)).toEqual([early]);
      await client.query('COMMIT');
      runner.active = false;
      // The next worker claim (as after the late commit's wake) takes it, well before the sweep is due.
      const next = await q.claimBatch(5, 'w', following);
      expect(next.map((j) => j.id)).toEqual([late]);
      expect(await q.ackBatch([...first, ...next])).toBe(2);
    } finally {
      await client.end();
    }
  });

  /** A worker of `name` (concurrency 1, no prefetch, no idle poll) whose claims follow the watermark `claimed` set; resolves once it is idle. */
  async function followingWorker(name: string, seen: string[]): Promise<QueueWorker> {
    const q = store.queue(name);
    // A fresh row claimed the way a worker claims: the store's watermark for the queue is set.
    await q.enqueue('seed');
    const [seed] = await q.claimBatch(1, 'w', following);
    expect(seed?.payload).toBe('seed');
    await seed!.ack();
    let claims = 0;
    const counted = new Proxy(q, {
      get(target, prop, receiver) {
        if (prop === 'claimBatch') {
          return async (max: number, workerId?: string, opts?: ClaimOpts) => {
            const jobs = await target.claimBatch(max, workerId, opts);
            claims += 1;
            return jobs;
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const worker = new QueueWorker({
      queue: counted,
      handler: async (job) => void seen.push(job.payload as string),
      name: 'watermark hand-off',
      workerId: 'wm-worker',
      concurrency: 1,
      prefetch: 0,
      idlePollIntervalMs: 60_000,
      drainTimeoutMs: 5_000,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    });
    worker.start();
    await waitFor('the worker is idle', () => claims >= 1, 10_000, 5);
    return worker;
  }

  it('a hand-off to a worker following the watermark: the enqueue is handed off, and a job that fell due at a higher priority still runs first', async () => {
    const seen: string[] = [];
    const worker = await followingWorker('wm-handoff', seen);
    try {
      const q = store.queue('wm-handoff');
      const handed = await q.enqueue('handed');
      await waitFor('the handed-off job ran', () => seen.length === 1, 10_000, 5);
      expect(seen).toEqual(['handed']);
      expect(await q.getJob(handed)).toBeNull();
      await q.enqueue('A', { priority: 10, delayMs: 300 });
      await waitFor('A is due', async () => (await q.stats()).scheduled === 0, 10_000, 10);
      await q.enqueue('B');
      await waitFor('both ran', () => seen.length === 3, 10_000, 5);
      expect(seen).toEqual(['handed', 'A', 'B']);
    } finally {
      await worker.stop();
    }
  });

  it('a claim after the watermark reads a handful of pages while a held snapshot keeps the index entries of 20,000 claimed jobs before it', async () => {
    const name = 'wm-cost';
    const q = store.queue(name);
    const sch = `"${db.location}"`;
    for (let k = 0; k < 2; k++) await q.enqueueMany(Array.from({ length: 10_000 }, (_, i) => i));
    const buffers = await withClient(async (holder) => {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query(`SELECT count(*) FROM ${sch}.jobs`);
      for (;;) {
        const jobs = await q.claimBatch(1_000, 'w', following);
        if (jobs.length === 0) break;
        expect(await q.ackBatch(jobs)).toBe(jobs.length);
      }
      await q.enqueueMany([1, 2, 3]);
      return withClient(async (c) => {
        // A watermark just before the three new jobs: after the 20,000 claimed ones.
        const runAt = (await c.query(`SELECT min(run_at)::text AS r FROM ${sch}.jobs WHERE queue = $1`, [name])).rows[0]
          .r as string;
        const sql = engineSql(db.location).queue.claimAfter;
        const plan = await explainAnalyzed(c, sql.text, [name, 10, null, 'w', false, 0, runAt]);
        const claimed = await c.query(
          `SELECT count(*)::int AS n FROM ${sch}.jobs WHERE queue = $1 AND state = 'processing'`,
          [name],
        );
        expect(claimed.rows[0].n).toBe(3);
        await holder.query('COMMIT');
        return scanPagesOn(plan, 'jobs');
      });
    });
    // The scans of the jobs table read a handful of pages (18 when measured); the same statement from a watermark
    // before the claimed jobs walks their dead entries (444 when measured). The statement's writes and a fresh
    // connection's catalog reads are left out: they vary with the server's load, not with the dead entries.
    expect(buffers).toBeLessThan(100);
  });
});
