import { afterEach, describe, expect, it } from '@jest/globals';
import { InvalidArgument, InvalidName, InvalidOption } from '../../lib/contract/errors.js';
import type { ClaimOpts, Job, Queue, Store } from '../../lib/contract/types.js';
import { sqliteOpener } from '../../lib/engines/sqlite/connection.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { PG_URL, sqliteDriverFromEnv, type EngineFixture } from '../helpers/engines.js';
import { expectError, uid, untilDbPasses, useEnv, waitFor } from './harness.js';

const HOUR = 3_600_000;

function payloads(jobs: readonly Job[]): unknown[] {
  return jobs.map((j) => j.payload);
}

async function ackAll(jobs: readonly Job[]): Promise<void> {
  for (const j of jobs) expect(await j.ack()).toBe(true);
}

/** Per-key concurrency, per-key rate limits and global concurrency, enforced in the claim (issue #27 item 5, SPEC §11). */
export function limitsContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;
  const other = (): Store => env.other;

  describe('JobInfo shows the keys (issue #29 item 1)', () => {
    it('getJob, getJobByKey, listDead, listJobs, searchJobs and jobDetail carry concurrencyKey and rateLimitKey', async () => {
      const q = store().queue(uid('ck-info'), { maxAttempts: 1 });
      const keyed = await q.enqueue(
        { t: 'acme' },
        { concurrencyKey: 'tenant-acme', rateLimitKey: 'acme', uniqueKey: 'u1' },
      );
      const plain = await q.enqueue({ n: 1 });
      const admin = store().admin();
      const keys = (j: { concurrencyKey: string | null; rateLimitKey: string | null } | null | undefined) => [
        j?.concurrencyKey,
        j?.rateLimitKey,
      ];
      expect(keys(await q.getJob(keyed))).toEqual(['tenant-acme', 'acme']);
      expect(keys(await q.getJob(plain))).toEqual([null, null]);
      expect(keys(await q.getJobByKey('u1'))).toEqual(['tenant-acme', 'acme']);
      expect(keys(await admin.jobDetail(q.name, keyed))).toEqual(['tenant-acme', 'acme']);
      expect((await admin.searchJobs(q.name, {})).jobs.map(keys)).toEqual([
        [null, null],
        ['tenant-acme', 'acme'],
      ]);
      expect((await admin.listJobs(q.name, { state: 'pending' })).jobs.map(keys)).toEqual([
        ['tenant-acme', 'acme'],
        [null, null],
      ]);
      // Processing, then dead: the key stays on the row.
      const [first, second] = await q.claimBatch(2, 'w');
      expect([first?.id, second?.id]).toEqual([keyed, plain]);
      expect(keys(await other().queue(q.name).getJob(keyed))).toEqual(['tenant-acme', 'acme']);
      expect(await first!.fail(new Error('boom'))).toBe(true);
      expect(keys((await q.listDead()).find((j) => j.id === keyed))).toEqual(['tenant-acme', 'acme']);
      expect(keys((await admin.searchJobs(q.name, { state: 'dead' })).jobs[0])).toEqual(['tenant-acme', 'acme']);
      expect(await second!.ack()).toBe(true);
    });
  });

  describe('a retry or a cancel that frees a key wakes the queue (issue #29)', () => {
    const workers: QueueWorker[] = [];
    afterEach(async () => {
      for (const w of workers.splice(0)) await w.stop();
    });
    const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

    /** An idle worker (idle poll one minute) on `name`, started after its first claim returned empty. */
    async function idleWorker(name: string, seen: unknown[]): Promise<void> {
      const q = store().queue(name);
      let claims = 0;
      const counted = new Proxy(q, {
        get(target, prop, receiver) {
          if (prop === 'claimBatch') {
            return async (max: number, workerId?: string, opts?: ClaimOpts) => {
              const jobs = await target.claimBatch(max, workerId, opts);
              claims++;
              return jobs;
            };
          }
          const v: unknown = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      const worker = new QueueWorker({
        queue: counted,
        name: 'limits wake test',
        concurrency: 1,
        prefetch: 0,
        leaseMs: HOUR,
        idlePollIntervalMs: 60_000,
        drainTimeoutMs: 5_000,
        workerId: 'idle',
        logger: silent,
        handler: async (job) => {
          seen.push(job.payload);
        },
      });
      workers.push(worker);
      worker.start();
      await waitFor("the worker's first claim returned", () => claims >= 1, 10_000, 5);
    }

    for (const how of ['retry', 'retry to dead', 'cancel'] as const) {
      it(`${how}: the waiting job of the same key is claimed well before the idle poll`, async () => {
        const name = uid('ck-wake');
        const q = store().queue(name);
        await q.enqueue('first', { concurrencyKey: 'k', maxAttempts: how === 'retry to dead' ? 1 : 5 });
        const holder = await waitFor('the first job claimed', () => q.claimOne('test'));
        await q.enqueue('second', { concurrencyKey: 'k' });
        const seen: unknown[] = [];
        await idleWorker(name, seen);
        expect(seen).toEqual([]);
        if (how === 'cancel') expect(await q.cancel(holder.id)).toBe(true);
        else expect(await holder.retry(new Error('later'), HOUR)).toBe(true);
        await waitFor('the second job handled', () => seen.length > 0, 10_000, 10);
        expect(seen).toEqual(['second']);
      });
    }
  });

  describe('concurrencyKey', () => {
    it('without a concurrencyLimit is a mutex per key: one job of a key processing at once, the others of other keys still claimed', async () => {
      const q = store().queue(uid('ck'));
      await q.enqueue('a1', { concurrencyKey: 'a' });
      await q.enqueue('a2', { concurrencyKey: 'a' });
      await q.enqueue('b1', { concurrencyKey: 'b' });
      await q.enqueue('free');
      const first = await q.claimBatch(10, 'w');
      expect(payloads(first)).toEqual(['a1', 'b1', 'free']);
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      await ackAll(first);
      expect(payloads(await q.claimBatch(10, 'w'))).toEqual(['a2']);
    });

    it('a batch fills past a run of one key after batches of interleaved keys', async () => {
      const q = store().queue(uid('ck-run'), { limitKeys: { concurrencyKey: 'payload.k' } });
      // Batches of distinct keys first: each claim fills its batch from the head of its candidates.
      for (let round = 0; round < 3; round++) {
        await q.enqueueMany(Array.from({ length: 100 }, (_, n) => ({ k: `r${round}-${n}` })));
        const jobs = await q.claimBatch(100, 'w');
        expect([round, jobs.length]).toEqual([round, 100]);
        await ackAll(jobs);
      }
      // Then more jobs of one key than twice the batch, ahead of jobs of other keys.
      await q.enqueueMany(Array.from({ length: 250 }, (_, n) => ({ k: 'hot', n })));
      await q.enqueueMany(Array.from({ length: 100 }, (_, n) => ({ k: `cold-${n}`, n })));
      const jobs = await q.claimBatch(100, 'w');
      expect(payloads(jobs)).toEqual([
        { k: 'hot', n: 0 },
        ...Array.from({ length: 99 }, (_, n) => ({ k: `cold-${n}`, n })),
      ]);
    });

    it('holds across stores (another process) claiming at once', async () => {
      const name = uid('ck-stores');
      const q = store().queue(name);
      const q2 = other().queue(name);
      for (let round = 0; round < 20; round++) {
        await q.enqueueMany(
          [1, 2, 3, 4, 5, 6].map((n) => ({ round, n })),
          { concurrencyKey: `k${round}` },
        );
        const claims = await Promise.all([q, q2, q, q2, q, q2].map((h, i) => h.claimBatch(10, `w${i}`)));
        expect([round, claims.flat().length]).toEqual([round, 1]);
      }
    });

    it('concurrencyLimit N (setLimits) lets N of one key run; settings() shows it', async () => {
      const q = store().queue(uid('ck-n'));
      await q.setLimits({ concurrencyLimit: 2 });
      for (let i = 0; i < 5; i++) await q.enqueue(i, { concurrencyKey: 'k' });
      expect(payloads(await q.claimBatch(10, 'w'))).toEqual([0, 1]);
      expect((await other().queue(q.name).settings()).concurrencyLimit).toBe(2);
      await q.setLimits({ concurrencyLimit: 3 });
      expect(payloads(await q.claimBatch(10, 'w'))).toEqual([2]);
    });

    it('frees its slot when the job fails, is retried, is cancelled or its lease lapses', async () => {
      const q = store().queue(uid('ck-free'));
      for (let i = 0; i < 5; i++) await q.enqueue(i, { concurrencyKey: 'k', maxAttempts: 5 });
      const [j0] = await q.claimBatch(10, 'w');
      expect(await j0!.fail(new Error('x'))).toBe(true);
      const [j1] = await q.claimBatch(10, 'w');
      expect(j1!.payload).toBe(1);
      expect(await j1!.retry(new Error('later'), HOUR)).toBe(true);
      const [j2] = await q.claimBatch(10, 'w');
      expect(j2!.payload).toBe(2);
      expect(await q.cancel(j2!.id)).toBe(true);
      const [j3] = await q.claimBatch(10, 'w', { leaseMs: 200 });
      expect(j3!.payload).toBe(3);
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      // The lapsed lease frees the slot: its job is reclaimed (claim order), the key still one at a time.
      const again = await waitFor(
        'the lapsed job reclaimed',
        async () => {
          const js = await q.claimBatch(10, 'w');
          return js.length > 0 ? js : null;
        },
        10_000,
        50,
      );
      expect(payloads(again)).toEqual([3]);
    });

    it('comes from the queue option limitKeys (a payload path or a function), the enqueue option winning', async () => {
      const byPath = store().queue(uid('ck-path'), { limitKeys: { concurrencyKey: 'payload.tenant.id' } });
      await byPath.enqueueMany([
        { tenant: { id: 't1' }, n: 1 },
        { tenant: { id: 't1' }, n: 2 },
        { tenant: { id: 't2' }, n: 3 },
      ]);
      expect((await byPath.claimBatch(10, 'w')).map((j) => (j.payload as { n: number }).n)).toEqual([1, 3]);
      const byFn = store().queue(uid('ck-fn'), { limitKeys: { concurrencyKey: (p) => `k${(p as number) % 2}` } });
      await byFn.enqueueBulk([
        { payload: 1 },
        { payload: 3 },
        { payload: 2 },
        { payload: 5, opts: { concurrencyKey: 'own' } },
      ]);
      expect(payloads(await byFn.claimBatch(10, 'w'))).toEqual([1, 2, 5]);
    });

    it('is accepted in a transaction', async () => {
      const name = uid('ck-tx');
      await store().withTx(async (tx) => {
        await tx.enqueue(name, 1, { concurrencyKey: 'k' });
        await tx.enqueue(name, 2, { concurrencyKey: 'k' });
      });
      expect(payloads(await store().queue(name).claimBatch(10, 'w'))).toEqual([1]);
    });
  });

  describe('globalConcurrency', () => {
    it('caps the queue processing at once across stores; removing it (null) lifts the cap', async () => {
      const name = uid('global');
      const q = store().queue(name);
      await q.setLimits({ globalConcurrency: 2 });
      for (let i = 0; i < 6; i++) await q.enqueue(i);
      const a = await q.claimBatch(10, 'w');
      expect(payloads(a)).toEqual([0, 1]);
      expect(await other().queue(name).claimBatch(10, 'w2')).toEqual([]);
      await a[0]!.ack();
      expect(payloads(await other().queue(name).claimBatch(10, 'w2'))).toEqual([2]);
      expect((await q.settings()).globalConcurrency).toBe(2);
      await q.setLimits({ globalConcurrency: null });
      expect(payloads(await q.claimBatch(10, 'w'))).toEqual([3, 4, 5]);
      expect((await q.settings()).globalConcurrency).toBeNull();
    });
  });

  describe('keyRateLimit', () => {
    it('caps claims per rateLimitKey per window across stores; other keys and unkeyed jobs are not counted', async () => {
      const name = uid('krate');
      const q = store().queue(name, { limitKeys: { rateLimitKey: 'payload.t' } });
      await q.setLimits({ keyRateLimit: { max: 2, perMs: HOUR } });
      await q.enqueueMany([
        { t: 'a', n: 1 },
        { t: 'a', n: 2 },
        { t: 'a', n: 3 },
        { t: 'b', n: 4 },
      ]);
      await q.enqueue({ n: 5 }, { rateLimitKey: 'b' });
      await store().withTx((tx) => tx.enqueue(name, { n: 6 }));
      const first = await q.claimBatch(2, 'w');
      const rest = await other().queue(name).claimBatch(10, 'w2');
      const got = [...first, ...rest].map((j) => (j.payload as { n: number }).n).sort((x, y) => x - y);
      expect(got).toEqual([1, 2, 4, 5, 6]);
      await ackAll([...first, ...rest]);
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      expect((await q.settings()).keyRateLimit).toEqual({ max: 2, perMs: HOUR });
      // A new limit starts fresh windows.
      await q.setLimits({ keyRateLimit: { max: 1, perMs: HOUR } });
      expect(payloads(await q.claimBatch(10, 'w'))).toEqual([{ t: 'a', n: 3 }]);
    });

    it('a key whose window is full is skipped by the scan: a job of another key behind more of its jobs than one claim reads is claimed', async () => {
      const name = uid('krate-scan');
      const q = store().queue(name, { limitKeys: { rateLimitKey: 'payload.k' } });
      await q.setLimits({ keyRateLimit: { max: 1, perMs: HOUR } });
      // More jobs of `hot` than a claim of one reads as candidates (at least 256), then one of `cold`.
      const HOT = 600;
      await q.enqueueMany(Array.from({ length: HOT }, (_, n) => ({ k: 'hot', n })));
      await q.enqueue({ k: 'cold', n: HOT });
      expect(payloads(await q.claimBatch(1, 'w'))).toEqual([{ k: 'hot', n: 0 }]);
      expect(payloads(await q.claimBatch(1, 'w'))).toEqual([{ k: 'cold', n: HOT }]);
      expect(await other().queue(name).claimBatch(10, 'w2')).toEqual([]);
      expect((await q.stats()).pending).toBe(HOT - 1);
    });
  });

  describe('ended rate windows are deleted', () => {
    const KEYS = 2_000;
    const PER_MS = 400;

    /** A queue with a per-key rate limit of `perMs`, where each of `keys` distinct keys had one job claimed and acked. */
    async function usedKeys(prefix: string, keys: number, perMs: number): Promise<{ q: Queue; lastClaim: number }> {
      const q = store().queue(uid(prefix), { limitKeys: { rateLimitKey: 'payload.k' } });
      await q.setLimits({ keyRateLimit: { max: 1, perMs } });
      await q.enqueueMany(Array.from({ length: keys }, (_, i) => ({ k: `key-${i}` })));
      let claimed = 0;
      while (claimed < keys) {
        const jobs = await q.claimBatch(500, 'w');
        expect(jobs.length).toBeGreaterThan(0);
        expect(await q.ackBatch(jobs)).toBe(jobs.length);
        claimed += jobs.length;
      }
      return { q, lastClaim: await store().now() };
    }

    it(`sweepExpired deletes the windows of ${KEYS} keys once they ended, and keeps a window that runs`, async () => {
      const { q, lastClaim } = await usedKeys('kw-sweep', KEYS, PER_MS);
      expect(await rateWindowRows(engine, env.db.location, q.name)).toBe(KEYS);
      // A key of another queue whose window runs for an hour: its window stays, and keeps holding.
      const live = store().queue(uid('kw-live'));
      await live.setLimits({ keyRateLimit: { max: 1, perMs: HOUR } });
      await live.enqueueMany([1, 2], { rateLimitKey: 'busy' });
      await ackAll(await live.claimBatch(10, 'w'));
      await untilDbPasses(store(), lastClaim + PER_MS);
      await q.sweepExpired();
      await live.sweepExpired();
      expect(await rateWindowRows(engine, env.db.location, q.name)).toBe(0);
      expect(await rateWindowRows(engine, env.db.location, live.name)).toBe(1);
      expect(await live.claimBatch(10, 'w')).toEqual([]);
      // A key whose window was deleted starts a fresh one.
      await q.enqueue({ k: 'key-0' });
      expect((await q.claimBatch(10, 'w')).length).toBe(1);
      expect(await rateWindowRows(engine, env.db.location, q.name)).toBe(1);
    });

    it('the retention runner deletes ended windows of every queue, listed or not, with or without jobs left', async () => {
      const { q, lastClaim } = await usedKeys('kw-retention', 200, PER_MS);
      // A window that runs for an hour stays.
      const hour = store().queue(uid('kw-hour'));
      await hour.setLimits({ keyRateLimit: { max: 5, perMs: HOUR } });
      await hour.enqueue(1, { rateLimitKey: 'x' });
      await ackAll(await hour.claimBatch(10, 'w'));
      expect(await rateWindowRows(engine, env.db.location, q.name)).toBe(200);
      await untilDbPasses(store(), lastClaim + PER_MS);
      const stop = new AbortController();
      const errors: unknown[] = [];
      const running = store().runRetention(stop.signal, { intervalMs: 100, onError: (e) => errors.push(e) });
      try {
        await waitFor(
          'the retention runner to delete the ended windows',
          async () => (await rateWindowRows(engine, env.db.location, q.name)) === 0,
          15_000,
          20,
        );
      } finally {
        stop.abort();
        await running;
      }
      expect(errors).toEqual([]);
      expect(await rateWindowRows(engine, env.db.location, hour.name)).toBe(1);
    });
  });

  describe('settings', () => {
    it('are defaults when none were set', async () => {
      expect(await store().queue(uid('defaults')).settings()).toMatchObject({
        paused: false,
        rateLimit: null,
        concurrencyLimit: 1,
        globalConcurrency: null,
        keyRateLimit: null,
      });
    });
  });

  describe('bad input', () => {
    it('a limit that is not a positive integer is InvalidArgument naming it, before any I/O', async () => {
      const q = store().queue(uid('bad-limits'));
      for (const [limits, field] of [
        [{ concurrencyLimit: 0 }, 'limits.concurrencyLimit'],
        [{ concurrencyLimit: 1.5 }, 'limits.concurrencyLimit'],
        [{ globalConcurrency: -1 }, 'limits.globalConcurrency'],
        [{ globalConcurrency: '2' }, 'limits.globalConcurrency'],
        [{ keyRateLimit: { max: 0, perMs: 10 } }, 'limits.keyRateLimit.max'],
        [{ keyRateLimit: { max: 1, perMs: Number.NaN } }, 'limits.keyRateLimit.perMs'],
        [{ concurrency: 2 }, 'limits.concurrency'],
      ] as const) {
        const e = await expectError(() => q.setLimits(limits as never), InvalidArgument);
        expect(e.argument).toBe(field);
        expect(e.message).toContain(field);
      }
      await expectError(() => q.setLimits(null as never), InvalidArgument);
      expect((await q.settings()).concurrencyLimit).toBe(1);
    });

    it('a key function returning a non-string, or throwing, and a key path not found are InvalidArgument naming the key, writing nothing', async () => {
      const fn = store().queue(uid('bad-fn'), {
        limitKeys: { concurrencyKey: (p) => (p as { n: unknown }).n as string },
      });
      let e = await expectError(() => fn.enqueue({ n: 7 }), InvalidArgument);
      expect(e.message).toMatch(/^concurrencyKey function must return a string for payload, got number/);
      e = await expectError(() => fn.enqueueMany([{ n: 'ok' }, { n: null }]), InvalidArgument);
      expect(e.message).toContain('payloads[1]');
      const thrower = store().queue(uid('bad-throw'), {
        limitKeys: {
          rateLimitKey: () => {
            throw new Error('boom');
          },
        },
      });
      e = await expectError(() => thrower.enqueue(1), InvalidArgument);
      expect(e.argument).toBe('rateLimitKey');
      const path = store().queue(uid('bad-path'), { limitKeys: { rateLimitKey: 'payload.tenantId' } });
      e = await expectError(() => path.enqueue({ tenant: 'x' }), InvalidArgument);
      expect(e.message).toBe('rateLimitKey path "payload.tenantId" not found in payload');
      e = await expectError(
        () => path.enqueueBulk([{ payload: { tenantId: 'a' } }, { payload: { tenantId: 3 } }]),
        InvalidArgument,
      );
      expect(e.message).toContain('jobs[1].payload');
      for (const q of [fn, path]) expect((await q.stats()).pending).toBe(0);
    });

    it('a key that is not a well-formed string is InvalidName; a key source that is neither a payload path nor a function is InvalidOption', async () => {
      const q = store().queue(uid('bad-key'));
      await expectError(() => q.enqueue(1, { concurrencyKey: 5 as never }), InvalidName);
      await expectError(() => q.enqueue(1, { rateLimitKey: 'x'.repeat(1025) }), InvalidName);
      await expectError(
        () => store().queue(uid('bad-src'), { limitKeys: { concurrencyKey: 'tenantId' as never } }),
        InvalidOption,
      );
      await expectError(
        () => store().queue(uid('bad-src'), { limitKeys: { concurrencyKey: 'payload.' as never } }),
        InvalidOption,
      );
      expect((await q.stats()).pending).toBe(0);
    });
  });

  describe('queues without limits', () => {
    it('are claimed as before next to a limited queue', async () => {
      const plain: Queue = store().queue(uid('plain'));
      const keyed = store().queue(uid('keyed'));
      await keyed.enqueue(1, { concurrencyKey: 'k' });
      await plain.enqueueMany([1, 2, 3]);
      expect(payloads(await plain.claimBatch(10, 'w'))).toEqual([1, 2, 3]);
    });
  });
}

/** Engine-level read for the window tests: how many per-key rate window rows `queue` has. */
async function rateWindowRows(engine: EngineFixture, location: string, queue: string): Promise<number> {
  if (engine.kind === 'sqlite') {
    const { open } = await sqliteOpener(sqliteDriverFromEnv().driver);
    const db = open(location, { readonly: true });
    try {
      return db
        .prepare('SELECT count(*) FROM __alkstore_key_rate_windows WHERE queue = ?')
        .pluck()
        .get(queue) as number;
    } finally {
      db.close();
    }
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const r = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${location}".key_rate_windows WHERE queue = $1`,
      [queue],
    );
    return Number(r.rows[0]!.n);
  } finally {
    await client.end();
  }
}
