import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Job, Queue, Store, TxOps } from '../../lib/contract/types.js';
import { openTx } from '../helpers/open-tx.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { type EngineDb, PG_URL, describePg, postgres, waitFor } from '../helpers/engines.js';
import { MemoryLogger, startDispatcher } from '../outbox/outbox-fixtures.js';
import { withClient } from './pg-helpers.js';

// PostgreSQL-only (docs/postgres.md, Key locks): a producer's transaction holds the lock of each
// ordering key it enqueued on until it commits, and alkstore's own statements that end keyed jobs (a
// dispatcher's or a worker's acks, a claim's burials, the expiry sweep, cancels) take the locks of
// the keys they promote. Producers that take their keys in any order never deadlock against those
// statements. (Two producer transactions taking the same keys in opposite orders still can: that
// cycle is the caller's, see key-locks-tx.test.ts. Here each producer owns its keys, so every cycle
// would go through alkstore's own statements.) SQLite has one writer at a time: a transaction waits
// for the writer lock before it takes anything, so no cycle can form there.

/** Producer transactions per test. */
const TRANSACTIONS = 5_000;
/** Concurrent producers, each with its own connection and its own keys. */
const PRODUCERS = 6;
/** Keys of each producer. */
const KEYS = 6;
/** Keyed enqueues per transaction: distinct keys of the producer, in random order. */
const PER_TX = 2;

/** A key of producer `p`. */
const keyOf = (p: number, k: number): string => `p${p}-k${k}`;

/** `PER_TX` distinct keys out of `KEYS`, in random order. */
function randomKeys(): number[] {
  const ks = Array.from({ length: KEYS }, (_, i) => i);
  for (let i = ks.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [ks[i], ks[j]] = [ks[j]!, ks[i]!];
  }
  return ks.slice(0, PER_TX);
}

/** What the producers did: committed messages per key (`n` runs 0, 1, … per key) and every failure. */
interface Produced {
  perKey: Map<string, number>;
  failures: unknown[];
}

/**
 * `TRANSACTIONS` transactions from `PRODUCERS` concurrent producers on `store`, each enqueueing
 * `PER_TX` messages with `enqueue(tx, key, payload)` on its own keys in random order.
 */
async function produce(
  store: Store,
  enqueue: (tx: TxOps, key: string, payload: object) => Promise<unknown>,
): Promise<Produced> {
  const perKey = new Map<string, number>();
  const failures: unknown[] = [];
  let started = 0;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async (_, p) => {
      while (started < TRANSACTIONS) {
        started++;
        const keys = randomKeys().map((k) => keyOf(p, k));
        try {
          await store.withTx(async (tx) => {
            for (const key of keys) await enqueue(tx, key, { key, n: perKey.get(key) ?? 0 });
          });
          for (const key of keys) perKey.set(key, (perKey.get(key) ?? 0) + 1);
        } catch (err) {
          failures.push(err);
        }
      }
    }),
  );
  return { perKey, failures };
}

/** A failure as `code: message` (40P01 is `deadlock detected`). */
function describeFailure(err: unknown): string {
  const cause = (err as { cause?: { code?: string } }).cause;
  return `${cause?.code ?? (err as { code?: string }).code ?? '?'}: ${(err as Error).message}`;
}

/** Lines a worker or dispatcher logged about a deadlock of one of its statements. */
const deadlockLines = (logger: MemoryLogger): string[] => logger.lines.filter((l) => /deadlock|40P01/i.test(l));

/** Records deliveries per key and counts the ones out of order or repeated. */
class Deliveries {
  readonly next = new Map<string, number>();
  total = 0;
  wrong: string[] = [];
  take(payload: unknown): void {
    const { key, n } = payload as { key: string; n: number };
    const want = this.next.get(key) ?? 0;
    if (n !== want) this.wrong.push(`${key}: got ${n}, expected ${want}`);
    this.next.set(key, n + 1);
    this.total++;
  }
}

describePg('postgres keyed producers beside alkstore workers', () => {
  let db: EngineDb;
  let store: Store;
  let producers: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
    producers = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: PRODUCERS });
  });
  afterAll(async () => {
    await producers?.close();
    await db.destroy();
  });

  it('outbox: 5,000 producer transactions with keys in random order beside a running dispatcher: no deadlock, every message delivered once in key order', async () => {
    const outbox = 'keyed-producers';
    const logger = new MemoryLogger();
    const seen = new Deliveries();
    const dispatcher = startDispatcher({
      store,
      outbox,
      logger,
      settings: { ordering: 'per-key', claimSize: 32, concurrency: 32, busyPollIntervalMs: 5 },
      handler: (job) => seen.take(job.payload),
    });
    let produced: Produced;
    try {
      produced = await produce(producers, (tx, key, payload) =>
        tx.outboxEnqueue(outbox, payload, { orderingKey: key }),
      );
      expect(produced.failures.map(describeFailure)).toEqual([]);
      expect(deadlockLines(logger)).toEqual([]);
      const total = [...produced.perKey.values()].reduce((a, b) => a + b, 0);
      expect(total).toBe(TRANSACTIONS * PER_TX);
      await waitFor('every message delivered', () => seen.total >= total, 60_000, 20);
    } finally {
      await dispatcher.stop();
    }
    expect(seen.wrong).toEqual([]);
    expect(Object.fromEntries(seen.next)).toEqual(Object.fromEntries(produced.perKey));
    expect(deadlockLines(logger)).toEqual([]);
  }, 110_000);

  it('queue: 5,000 producer transactions with ordering keys in random order beside a running worker: no deadlock, every job handled once in key order', async () => {
    const queue = 'keyed-producers-q';
    const logger = new MemoryLogger();
    const seen = new Deliveries();
    const worker = new QueueWorker({
      queue: store.queue(queue),
      name: 'keyed producers',
      workerId: 'keyed-producers',
      concurrency: 32,
      idlePollIntervalMs: 200,
      drainTimeoutMs: 5_000,
      logger,
      handler: async (job) => seen.take(job.payload),
    });
    worker.start();
    let produced: Produced;
    try {
      produced = await produce(producers, (tx, key, payload) => tx.enqueue(queue, payload, { orderingKey: key }));
      expect(produced.failures.map(describeFailure)).toEqual([]);
      expect(deadlockLines(logger)).toEqual([]);
      const total = [...produced.perKey.values()].reduce((a, b) => a + b, 0);
      expect(total).toBe(TRANSACTIONS * PER_TX);
      await waitFor('every job handled', () => seen.total >= total, 60_000, 20);
    } finally {
      await worker.stop();
    }
    expect(seen.wrong).toEqual([]);
    expect(Object.fromEntries(seen.next)).toEqual(Object.fromEntries(produced.perKey));
    expect(deadlockLines(logger)).toEqual([]);
  }, 110_000);

  /** Whether a statement on this test's schema waits for an advisory (key) lock. */
  const waitsForKey = (): Promise<boolean> =>
    withClient(async (c) => {
      const r = await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
         WHERE NOT l.granted AND l.locktype = 'advisory' AND strpos(a.query, $1) > 0`,
        [`"${db.location}".`],
      );
      return Number(r.rows[0]!.n) > 0;
    });

  /**
   * Runs `op` while a producer's transaction holds key `B` of `queue`; once `op` has finished or waits
   * for a key, the producer enqueues on key `A` and commits. An `op` that ends jobs of keys A and B and
   * held A while it waited for B would close a cycle here, and PostgreSQL would roll one of the two
   * back (40P01).
   */
  async function besideProducer<T>(
    queue: string,
    op: () => Promise<T>,
  ): Promise<{ result: T; producerJobs: number[] }> {
    const tx = await openTx(producers);
    try {
      const producerJobs = [await tx.enqueue(queue, { by: 'producer', key: 'B' }, { orderingKey: 'B' })];
      let settled = false;
      const running = op().finally(() => {
        settled = true;
      });
      running.catch(() => undefined);
      await waitFor('the statement finished or waits for a key', async () => settled || (await waitsForKey()), 20_000);
      producerJobs.push(await tx.enqueue(queue, { by: 'producer', key: 'A' }, { orderingKey: 'A' }));
      await tx.commit();
      return { result: await running, producerJobs };
    } finally {
      if (!tx.finished) await tx.rollback();
    }
  }

  it('a batched ack of keys A and B while a producer holds B then takes A: both commit; the job of B is acked once the producer commits', async () => {
    const q = store.queue('beside-ack-batch');
    await q.enqueue({ key: 'A' }, { orderingKey: 'A' });
    await q.enqueue({ key: 'B' }, { orderingKey: 'B' });
    const jobs = await q.claimBatch(10, 'w');
    expect(jobs.map((j) => j.orderingKey)).toEqual(['A', 'B']);
    const { result, producerJobs } = await besideProducer(q.name, () => q.ackBatch(jobs));
    expect(result).toBe(2);
    // The keys moved on to the producer's jobs, which are now their heads.
    const next = await q.claimBatch(10, 'w');
    expect(next.map((j) => j.id).sort()).toEqual([...producerJobs].sort());
  });

  // Each ends the job and promotes its key's next job. One that changed the job's row and then waited
  // for the key would close a cycle: the producer's insert of the same unique key waits for that row.
  const endings: [string, (q: Queue, job: Job) => Promise<boolean>][] = [
    ['an ack', (_q, job) => job.ack()],
    ['an ack with a result', (_q, job) => job.ack({ ok: true })],
    ['a fail', (_q, job) => job.fail(new Error('no'))],
    ['a retry of the last attempt', (_q, job) => job.retry(new Error('no'))],
    ['a cancel', (q, job) => q.cancel(job.id)],
  ];
  it.each(endings)(
    "%s of a keyed job waits for its ordering key before it touches the row: a producer holding the key that enqueues the job's unique key gets the live job",
    async (what, end) => {
      const q = store.queue(`beside-unique-${endings.findIndex(([w]) => w === what)}`, { maxAttempts: 1 });
      const id = await q.enqueue({ n: 1 }, { orderingKey: 'A', uniqueKey: 'u' });
      const [job] = await q.claimBatch(1, 'w');
      const tx = await openTx(producers);
      try {
        const behind = await tx.enqueue(q.name, { n: 2 }, { orderingKey: 'A' });
        const ended = end(q, job!);
        await waitFor('it waits for key A', waitsForKey, 20_000);
        expect(await tx.enqueue(q.name, { n: 3 }, { uniqueKey: 'u' })).toBe(id);
        await tx.commit();
        expect(await ended).toBe(true);
        expect((await q.claimBatch(10, 'w')).map((j) => j.id)).toEqual([behind]);
      } finally {
        if (!tx.finished) await tx.rollback();
      }
    },
  );

  it('a claim burying lapsed heads of keys A and B while a producer holds B: it buries A and leaves B for a claim after the producer commits', async () => {
    const q = store.queue('beside-claim', { maxAttempts: 1 });
    await q.enqueue({ key: 'A' }, { orderingKey: 'A' });
    await q.enqueue({ key: 'B' }, { orderingKey: 'B' });
    const [a, b] = await q.claimBatch(10, 'crashed', { leaseMs: 200 });
    await waitFor(
      'both leases lapsed',
      async () => (await store.now()) > Math.max(a!.deadline, b!.deadline),
      10_000,
      20,
    );
    const { result, producerJobs } = await besideProducer(q.name, () => q.claimBatch(10, 'w'));
    expect(result).toEqual([]);
    expect((await q.getJob(a!.id))!.state).toBe('dead');
    // The next claim buries B's lapsed head (and takes A's new head); B's next job then becomes its head.
    const claimed = await q.claimBatch(10, 'w');
    expect((await q.getJob(b!.id))!.state).toBe('dead');
    claimed.push(...(await q.claimBatch(10, 'w')));
    expect(claimed.map((j) => j.id).sort()).toEqual([...producerJobs].sort());
  });

  it('the expiry sweep of heads of keys A and B while a producer holds B: it expires A and leaves B for the next sweep', async () => {
    const q = store.queue('beside-expire');
    const a = await q.enqueue({ key: 'A' }, { orderingKey: 'A', expiresInMs: 200 });
    const b = await q.enqueue({ key: 'B' }, { orderingKey: 'B', expiresInMs: 200 });
    const expiresAt = (await q.getJob(b))!.expiresAt!;
    await waitFor('both jobs expired', async () => (await store.now()) > expiresAt, 10_000, 20);
    const { result, producerJobs } = await besideProducer(q.name, () => q.sweepExpired());
    expect(result.expired).toBe(1);
    expect((await q.getJob(a))!.state).toBe('dead');
    expect((await q.sweepExpired()).expired).toBe(1);
    expect((await q.getJob(b))!.state).toBe('dead');
    expect((await q.claimBatch(10, 'w')).map((j) => j.id).sort()).toEqual([...producerJobs].sort());
  });
});
