import { describe, expect, it } from '@jest/globals';
import { SEARCH_SCAN_ROWS, type JobSearch, type StoreAdmin } from '../../lib/contract/admin.js';
import { InvalidArgument } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { sqliteOpener } from '../../lib/engines/sqlite/connection.js';
import { PG_URL, sqliteDriverFromEnv, type EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';

/** Every id a search finds, following `next` to the end. */
export async function searchAll(admin: StoreAdmin, queue: string, query: JobSearch): Promise<number[]> {
  const ids: number[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await admin.searchJobs(queue, { ...query, cursor });
    ids.push(...page.jobs.map((j) => j.id));
    if (page.next === null) return ids;
    cursor = page.next;
  }
  throw new Error('too many pages');
}

/** The admin reads behind the dashboard's search and job detail page. */
export function adminSearchContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('searchJobs', () => {
    it('finds jobs by id, unique key, ordering key, state, error text and payload field, newest first', async () => {
      const q = store().queue(uid('srch'), { maxAttempts: 1 });
      const a = await q.enqueue({ orderId: 42, customer: { id: 'c-1' }, vip: true });
      const b = await q.enqueue({ orderId: '42', customer: { id: 'c-2' }, vip: false });
      const c = await q.enqueue({ orderId: 7, note: null }, { uniqueKey: 'order-7', orderingKey: 'cust-9' });
      const d = await q.enqueue({ orderId: 1.5 }, { delayMs: 3_600_000 });
      const claimed = await waitFor('a claim', () => q.claimOne('w'));
      expect(claimed.id).toBe(a);
      await claimed.fail(new Error('SMTP 550 Mailbox Unavailable'));
      const admin = store().admin();
      const ids = (query: JobSearch) => searchAll(admin, q.name, query);
      expect(await ids({})).toEqual([d, c, b, a]);
      expect(await ids({ id: c })).toEqual([c]);
      expect(await ids({ id: c, state: 'dead' })).toEqual([]);
      expect(await ids({ id: 999_999_999 })).toEqual([]);
      expect(await ids({ uniqueKey: 'order-7' })).toEqual([c]);
      expect(await ids({ orderingKey: 'cust-9' })).toEqual([c]);
      expect(await ids({ state: 'dead' })).toEqual([a]);
      expect(await ids({ state: 'pending' })).toEqual([d, c, b]);
      expect(await ids({ state: 'scheduled' })).toEqual([d]);
      expect(await ids({ state: 'processing' })).toEqual([]);
      expect(await ids({ error: 'mailbox unavailable' })).toEqual([a]);
      expect(await ids({ error: '552' })).toEqual([]);
      // Type-aware: the number 42 is not the string "42".
      expect(await ids({ payload: { path: 'orderId', equals: 42 } })).toEqual([a]);
      expect(await ids({ payload: { path: 'orderId', equals: '42' } })).toEqual([b]);
      expect(await ids({ payload: { path: 'orderId', equals: 1.5 } })).toEqual([d]);
      expect(await ids({ payload: { path: 'customer.id', equals: 'c-2' } })).toEqual([b]);
      expect(await ids({ payload: { path: 'vip', equals: true } })).toEqual([a]);
      expect(await ids({ payload: { path: 'vip', equals: false } })).toEqual([b]);
      expect(await ids({ payload: { path: 'note', equals: null } })).toEqual([c]);
      expect(await ids({ payload: { path: 'missing', equals: null } })).toEqual([]);
      expect(await ids({ payload: { path: 'orderId', equals: 42 }, state: 'dead', error: 'smtp' })).toEqual([a]);
      const job = (await admin.searchJobs(q.name, { id: a })).jobs[0];
      expect(job).toMatchObject({
        id: a,
        state: 'dead',
        payload: { orderId: 42 },
        lastError: expect.stringContaining('SMTP 550'),
      });
    });

    it('filters by enqueue time, [from, to)', async () => {
      const q = store().queue(uid('srch-time'));
      const [x, y] = await q.enqueueMany([1, 2]);
      const jx = (await q.getJob(x!))!;
      const admin = store().admin();
      expect(await searchAll(admin, q.name, { enqueuedFrom: jx.enqueuedAt })).toEqual([y, x]);
      expect(await searchAll(admin, q.name, { enqueuedTo: jx.enqueuedAt })).toEqual([]);
      expect(await searchAll(admin, q.name, { enqueuedFrom: jx.enqueuedAt + 3_600_000 })).toEqual([]);
    });

    it('pages by keyset with no gaps or repeats, and reads at most SEARCH_SCAN_ROWS rows a call', async () => {
      const q = store().queue(uid('srch-page'));
      const ids: number[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(...(await q.enqueueMany(Array.from({ length: 10_000 }, (_, k) => ({ k, even: k % 2 === 0 })))));
      const admin = store().admin();
      const first = await admin.searchJobs(q.name, { limit: 7 });
      expect(first.jobs.map((j) => j.id)).toEqual(ids.slice(-7).reverse());
      expect(first.next).not.toBeNull();
      const all = await searchAll(admin, q.name, { limit: 1000 });
      expect(all).toEqual([...ids].reverse());
      // A filter that matches nothing still answers page by page, each a bounded slice.
      const none = await admin.searchJobs(q.name, { error: 'never' });
      expect(none.jobs).toEqual([]);
      expect(none.scanned).toBe(SEARCH_SCAN_ROWS);
      expect(none.next).not.toBeNull();
      // Rows of other queues (earlier tests') count against the slice too: it is the table's id range.
      const rest = await admin.searchJobs(q.name, { error: 'never', cursor: none.next! });
      expect(rest.scanned).toBeGreaterThanOrEqual(30_000 - SEARCH_SCAN_ROWS);
      expect(rest.scanned).toBeLessThan(SEARCH_SCAN_ROWS);
      expect(rest.next).toBeNull();
      expect((await searchAll(admin, q.name, { payload: { path: 'even', equals: true }, limit: 1000 })).length).toBe(
        15_000,
      );
    }, 120_000);

    it('reads a dead search on the dead index: a few dead jobs under many newer rows come in one call', async () => {
      const q = store().queue(uid('srch-dead'), { maxAttempts: 1 });
      const dead = await q.enqueueMany([1, 2, 3]);
      for (const j of await q.claimBatch(3, 'w')) await j.fail(new Error('gone'));
      const noise = store().queue(uid('srch-noise'));
      for (let left = SEARCH_SCAN_ROWS + 10; left > 0; left -= 10_000)
        await noise.enqueueMany(Array.from({ length: Math.min(10_000, left) }, (_, i) => i));
      const page = await store().admin().searchJobs(q.name, { state: 'dead', error: 'gone' });
      expect(page.jobs.map((j) => j.id)).toEqual([...dead].reverse());
      expect(page.scanned).toBe(3);
      expect(page.next).toBeNull();
      // Any state: the table's newest rows first, so the same jobs take a second call.
      const first = await store().admin().searchJobs(q.name, { error: 'gone' });
      expect(first.jobs).toEqual([]);
      expect(
        (await store().admin().searchJobs(q.name, { error: 'gone', cursor: first.next! })).jobs.map((j) => j.id),
      ).toEqual([...dead].reverse());
    }, 120_000);

    it('the history (finished) and all read the outcome records too: completed with its result, cancelled, and dead, newest first', async () => {
      const q = store().queue(uid('srch-hist'), { maxAttempts: 1 });
      const [done, dead, cancelled, pending] = await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
      const jobs = await q.claimBatch(3, 'w');
      expect(jobs.map((j) => j.id)).toEqual([done, dead, cancelled]);
      await jobs[0]!.ack({ total: 42 });
      await jobs[1]!.fail(new Error('card declined'));
      expect(await q.cancel(cancelled!)).toBe(true);
      const admin = store().admin();
      const history = await searchAll(admin, q.name, { state: 'finished' });
      expect(history).toEqual([cancelled, dead, done]);
      const page = await admin.searchJobs(q.name, { state: 'finished' });
      expect(page.jobs.map((j) => [j.id, j.state])).toEqual([
        [cancelled, 'cancelled'],
        [dead, 'dead'],
        [done, 'completed'],
      ]);
      expect(page.jobs[2]).toMatchObject({ result: { total: 42 }, finishedAt: expect.any(Number) });
      expect(await searchAll(admin, q.name, {})).toEqual([pending, cancelled, dead, done]);
      // Every filter applies to the records as to the rows: by id, payload field, state.
      expect((await admin.searchJobs(q.name, { id: done! })).jobs.map((j) => j.state)).toEqual(['completed']);
      expect(await searchAll(admin, q.name, { state: 'finished', payload: { path: 'n', equals: 3 } })).toEqual([
        cancelled,
      ]);
      expect(await searchAll(admin, q.name, { state: 'finished', error: 'declined' })).toEqual([dead]);
      expect(await searchAll(admin, q.name, { state: 'pending' })).toEqual([pending]);
    });

    it('refuses bad input with a typed error naming the field, before any I/O', async () => {
      const admin = store().admin();
      const q = uid('srch-bad');
      expect(
        (await expectError(() => admin.searchJobs(q, { state: 'done' as never }), InvalidArgument)).message,
      ).toMatch(/^state/);
      expect((await expectError(() => admin.searchJobs(q, { limit: 0 }), InvalidArgument)).message).toMatch(/^limit/);
      expect((await expectError(() => admin.searchJobs(q, { id: -1 }), InvalidArgument)).message).toMatch(/^id/);
      expect((await expectError(() => admin.searchJobs(q, { cursor: 'nope' }), InvalidArgument)).message).toMatch(
        /^cursor/,
      );
      expect((await expectError(() => admin.searchJobs(q, { error: '' }), InvalidArgument)).message).toMatch(/^error/);
      expect(
        (await expectError(() => admin.searchJobs(q, { payload: { path: 'a;drop', equals: 1 } }), InvalidArgument))
          .message,
      ).toMatch(/^payload\.path/);
      expect(
        (await expectError(() => admin.searchJobs(q, { payload: { path: 'a', equals: {} as never } }), InvalidArgument))
          .message,
      ).toMatch(/^payload\.equals/);
      expect(
        (await expectError(() => admin.searchJobs(q, { enqueuedFrom: Number.NaN }), InvalidArgument)).message,
      ).toMatch(/^enqueuedFrom/);
    });
  });

  describe('jobDetail', () => {
    it('shows the row with the worker holding its claim and whether it waits behind its ordering key', async () => {
      const q = store().queue(uid('detail'));
      const head = await q.enqueue({ n: 1 }, { orderingKey: 'k' });
      const behind = await q.enqueue({ n: 2 }, { orderingKey: 'k' });
      const admin = store().admin();
      expect(await admin.jobDetail(q.name, head)).toMatchObject({
        id: head,
        state: 'pending',
        workerId: null,
        blocked: false,
      });
      expect(await admin.jobDetail(q.name, behind)).toMatchObject({ id: behind, blocked: true });
      const job = await waitFor('a claim', () => q.claimOne('worker-7'));
      expect(job.id).toBe(head);
      expect(await admin.jobDetail(q.name, head)).toMatchObject({
        state: 'processing',
        workerId: 'worker-7',
        attempts: 1,
      });
      await job.retry(new Error('again'), 3_600_000);
      expect(await admin.jobDetail(q.name, head)).toMatchObject({
        state: 'pending',
        workerId: null,
        attempts: 1,
        lastError: expect.stringContaining('again'),
      });
      expect(await admin.jobDetail(`${q.name}-other`, head)).toBeNull();
      await expectError(() => admin.jobDetail(q.name, 1.5), InvalidArgument);
    });

    it('lists each failed attempt with the worker that ran it and its error, not the attempt that succeeded', async () => {
      const name = uid('attempts');
      const qa = store().queue(name, { maxAttempts: 5 });
      const qb = env.other.queue(name, { maxAttempts: 5 });
      const id = await qa.enqueue({ n: 1 });
      const admin = store().admin();
      expect((await admin.jobDetail(name, id))?.failedAttempts).toEqual([]);
      const before = (await admin.jobDetail(name, id))!.enqueuedAt;
      const first = await waitFor('the first claim', () => qa.claimOne('worker-a'));
      await first.retry(new Error('first boom'), 0);
      const second = await waitFor('the second claim', () => qb.claimOne('worker-b'));
      await second.retry(new Error('second boom'), 0);
      const third = await waitFor('the third claim', () => qa.claimOne('worker-c'));
      await third.ack({ ok: true });
      const detail = await admin.jobDetail(name, id);
      expect(detail).toMatchObject({ state: 'completed', attempts: 3 });
      const attempts = detail!.failedAttempts;
      expect(attempts.map((a) => [a.attempt, a.workerId, a.outcome])).toEqual([
        [1, 'worker-a', 'retried'],
        [2, 'worker-b', 'retried'],
      ]);
      // Each attempt keeps the Error's stack: its first line, then the frames of this test file.
      expect(attempts.map((a) => a.error!.split('\n')[0])).toEqual(['Error: first boom', 'Error: second boom']);
      for (const a of attempts) expect(a.error).toMatch(/\n\s+at .*admin-search\.contract\.ts/);
      for (const a of attempts) {
        expect(a.claimedAt).toBeGreaterThanOrEqual(before);
        expect(a.endedAt).toBeGreaterThanOrEqual(a.claimedAt!);
      }
      expect(attempts[1]!.claimedAt).toBeGreaterThanOrEqual(attempts[0]!.endedAt);
      // The other store reads the same history.
      expect((await env.other.admin().jobDetail(name, id))?.failedAttempts).toEqual(attempts);
    });

    it('shows every attempt of a job that went dead after maxAttempts, the last one dead', async () => {
      const q = store().queue(uid('attempts-dead'), { maxAttempts: 3 });
      const id = await q.enqueue({ n: 1 });
      for (const w of ['w-1', 'w-2', 'w-3']) {
        const job = await waitFor(`a claim by ${w}`, () => q.claimOne(w));
        await job.retry(new Error(`failed on ${w}`), 0);
      }
      const detail = await store().admin().jobDetail(q.name, id);
      expect(detail).toMatchObject({ state: 'dead', attempts: 3 });
      expect(detail!.failedAttempts.map((a) => [a.attempt, a.workerId, a.outcome])).toEqual([
        [1, 'w-1', 'retried'],
        [2, 'w-2', 'retried'],
        [3, 'w-3', 'dead'],
      ]);
      expect(detail!.failedAttempts.map((a) => a.error!.split('\n')[0])).toEqual([
        'Error: failed on w-1',
        'Error: failed on w-2',
        'Error: failed on w-3',
      ]);
      expect(detail!.lastError).toBe('failed on w-3');
      // fail() records its attempt too.
      const f = store().queue(uid('attempts-fail'), { maxAttempts: 3 });
      const fid = await f.enqueue({ n: 2 });
      const fatal = new Error('fatal');
      await (await waitFor('a claim', () => f.claimOne('w-f'))).fail(fatal);
      const failed = (await store().admin().jobDetail(f.name, fid))!;
      expect(failed.failedAttempts.map((a) => [a.attempt, a.workerId, a.outcome, a.error])).toEqual([
        [1, 'w-f', 'dead', fatal.stack],
      ]);
      expect(failed.lastError).toBe('fatal');
      // A value that is not an Error is stored as its text; a stack longer than 8 KiB is cut to 8192 characters.
      const plain = await f.enqueue({ n: 3 }, { maxAttempts: 1 });
      await (await waitFor('a claim', () => f.claimOne('w-p'))).fail('just text');
      expect((await store().admin().jobDetail(f.name, plain))!.failedAttempts.map((a) => a.error)).toEqual([
        'just text',
      ]);
      const long = await f.enqueue({ n: 4 }, { maxAttempts: 1 });
      const huge = new Error('x'.repeat(20_000));
      await (await waitFor('a claim', () => f.claimOne('w-l'))).fail(huge);
      expect((await store().admin().jobDetail(f.name, long))!.failedAttempts.map((a) => a.error)).toEqual([
        huge.stack!.slice(0, 8192),
      ]);
    });

    // A plain queue (PostgreSQL's plain and full claims, SQLite's claim loop) and a queue with limits (the limited claims).
    for (const [kind, limits] of [
      ['plain', {}],
      ['limited', { limitKeys: { concurrencyKey: 'payload.tenant' } }],
    ] as const) {
      it(`records a claim whose lease lapsed as a lapsed attempt with its worker when another store takes the job over (${kind} queue)`, async () => {
        const name = uid(`attempts-lapsed-${kind}`);
        const qa = store().queue(name, { leaseMs: 300, maxAttempts: 3, ...limits });
        const qb = env.other.queue(name, { leaseMs: 300, maxAttempts: 3, ...limits });
        const id = await qa.enqueue({ tenant: 't-1' });
        const before = (await store().admin().jobDetail(name, id))!.enqueuedAt;
        // Store A claims and goes silent (no ack, retry or heartbeat): store B gets the job once A's lease lapsed.
        const a = await waitFor('the claim by A', () => qa.claimOne('worker-a'));
        const b = await waitFor('the take-over by B', () => qb.claimOne('worker-b'));
        expect([a.id, b.id, b.attempts]).toEqual([id, id, 2]);
        const detail = (await store().admin().jobDetail(name, id))!;
        expect(detail).toMatchObject({ state: 'processing', workerId: 'worker-b', attempts: 2 });
        expect(detail.failedAttempts.map((x) => [x.attempt, x.workerId, x.outcome, x.error])).toEqual([
          [1, 'worker-a', 'lapsed', null],
        ]);
        const [lapsed] = detail.failedAttempts;
        expect(lapsed!.claimedAt).toBeGreaterThanOrEqual(before);
        // It ended at its lease deadline: the lease after the claim.
        expect(lapsed!.endedAt).toBe(lapsed!.claimedAt! + 300);
        // The next attempt's own failure follows it.
        await b.retry(new Error('after take-over'), 0);
        const after = (await env.other.admin().jobDetail(name, id))!.failedAttempts;
        expect(after.map((x) => [x.attempt, x.workerId, x.outcome])).toEqual([
          [1, 'worker-a', 'lapsed'],
          [2, 'worker-b', 'retried'],
        ]);
      });

      it(`records the last attempt of a lapsed job the claim dead-letters for max attempts (${kind} queue)`, async () => {
        const name = uid(`attempts-buried-${kind}`);
        const qa = store().queue(name, { leaseMs: 300, maxAttempts: 1, ...limits });
        const qb = env.other.queue(name, { leaseMs: 300, maxAttempts: 1, ...limits });
        const id = await qa.enqueue({ tenant: 't-1' });
        await waitFor('the claim by A', () => qa.claimOne('worker-a'));
        // B's claims find the lapsed job with no attempts left and bury it.
        const dead = await waitFor('the burial', async () => {
          expect(await qb.claimOne('worker-b')).toBeNull();
          const d = await env.other.admin().jobDetail(name, id);
          return d?.state === 'dead' ? d : null;
        });
        expect(dead.lastError).toBe('max attempts exceeded');
        expect(dead.failedAttempts.map((x) => [x.attempt, x.workerId, x.outcome, x.error])).toEqual([
          [1, 'worker-a', 'dead', 'max attempts exceeded'],
        ]);
        expect(dead.failedAttempts[0]!.endedAt).toBe(dead.failedAttempts[0]!.claimedAt! + 300);
      });
    }

    it('prunes the attempts of a job gone from jobs and outcomes in the sweep, and keeps those of live jobs', async () => {
      const q = store().queue(uid('attempts-prune'), { maxAttempts: 2 });
      const gone = await q.enqueue({ n: 1 }, { maxAttempts: 1 });
      const kept = await q.enqueue({ n: 2 });
      await (await waitFor('a claim', () => q.claimOne('w'))).fail(new Error('gone'));
      await (await waitFor('a claim', () => q.claimOne('w'))).retry(new Error('kept'), 3_600_000);
      expect(await attemptRows(engine, env.db.location, [gone, kept])).toBe(2);
      expect(await q.purgeDead([gone])).toBe(1);
      expect(await attemptRows(engine, env.db.location, [gone])).toBe(1); // until the sweep
      await q.sweepExpired();
      expect(await attemptRows(engine, env.db.location, [gone])).toBe(0);
      expect(
        (await store().admin().jobDetail(q.name, kept))!.failedAttempts.map((a) => a.error!.split('\n')[0]),
      ).toEqual(['Error: kept']);
    });
  });

  describe('auditLog', () => {
    it('is the reserved stream __alkstore_audit, readable like any stream', async () => {
      const log = store().admin().auditLog();
      expect(log.name).toBe('__alkstore_audit');
      const offset = await log.publish({ action: 'test' });
      expect((await log.readSince(offset - 1, 1)).map((e) => e.payload)).toEqual([{ action: 'test' }]);
      expect(
        (
          await env.other
            .admin()
            .auditLog()
            .readSince(offset - 1, 1)
        ).map((e) => e.payload),
      ).toEqual([{ action: 'test' }]);
    });
  });
}

/** Engine-level read for the prune test: how many `job_attempts` rows the given job ids have. */
async function attemptRows(engine: EngineFixture, location: string, ids: readonly number[]): Promise<number> {
  if (engine.kind === 'sqlite') {
    const { open } = await sqliteOpener(sqliteDriverFromEnv().driver);
    const db = open(location, { readonly: true });
    try {
      return db
        .prepare(`SELECT count(*) FROM __alkstore_job_attempts WHERE job_id IN (${ids.map(() => '?').join(', ')})`)
        .pluck()
        .get(...ids) as number;
    } finally {
      db.close();
    }
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const r = await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${location}".job_attempts WHERE job_id = ANY($1::bigint[])`,
      [ids],
    );
    return Number(r.rows[0]!.n);
  } finally {
    await client.end();
  }
}
