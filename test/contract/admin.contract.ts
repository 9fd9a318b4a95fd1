import { describe, expect, it } from '@jest/globals';
import {
  LATENCY_BOUNDS_MS,
  latencyBucket,
  latencyQuantile,
  sumLatency,
  type JobListState,
  type StoreAdmin,
} from '../../lib/contract/admin.js';
import { InvalidArgument, InvalidName } from '../../lib/contract/errors.js';
import type { JobInfo, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';

/** Every job of a state, page by page; throws if a page repeats a job. */
async function pageAll(admin: StoreAdmin, queue: string, state: JobListState, limit: number): Promise<JobInfo[]> {
  const out: JobInfo[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await admin.listJobs(queue, { state, limit, cursor });
    out.push(...page.jobs);
    if (page.next === null) return out;
    cursor = page.next;
  }
  throw new Error('too many pages');
}

/** The admin API behind the dashboard and the CLI (keyset pages, bounded counts, repairs, throughput). */
export function adminContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('queues', () => {
    it('names every queue with jobs in any state, outbox-backed ones included', async () => {
      const a = uid('adm-a');
      const b = uid('adm-b');
      const box = uid('adm-box');
      await store().queue(a).enqueue(1);
      const qb = store().queue(b, { maxAttempts: 1 });
      await qb.enqueue(2);
      const job = await waitFor('a claim', () => qb.claimOne());
      await job.fail(new Error('boom'));
      await store().outboxEnqueue(box, { x: 1 });
      const names = await store().admin().queueNames();
      expect(names).toEqual(expect.arrayContaining([a, b, `__alkstore_outbox:${box}`]));
      expect([...names].sort()).toEqual(names);
    });
  });

  describe('listJobs', () => {
    it('pages pending jobs in claim order with no gaps or repeats, whatever the page size', async () => {
      const q = store().queue(uid('adm-page'));
      const expected: number[] = [];
      for (const priority of [0, 3, -2]) {
        const ids = await q.enqueueMany(
          Array.from({ length: 7 }, (_, i) => ({ priority, i })),
          { priority },
        );
        expected.push(...ids.map((id) => id));
      }
      const byClaimOrder = [...(await pageAll(store().admin(), q.name, 'pending', 1000))];
      expect(byClaimOrder.map((j) => j.priority)).toEqual([
        ...Array(7).fill(3),
        ...Array(7).fill(0),
        ...Array(7).fill(-2),
      ]);
      for (const size of [1, 2, 5, 20]) {
        const paged = await pageAll(store().admin(), q.name, 'pending', size);
        expect(paged.map((j) => j.id)).toEqual(byClaimOrder.map((j) => j.id));
      }
      expect(new Set(byClaimOrder.map((j) => j.id))).toEqual(new Set(expected));
      // Claim order is what a worker sees.
      const claimed = await q.claimBatch(21, 'w');
      expect(claimed.map((j) => j.id)).toEqual(byClaimOrder.map((j) => j.id));
    });

    it('filters by state: scheduled, processing, dead, all', async () => {
      const q = store().queue(uid('adm-states'), { maxAttempts: 1 });
      const [ready, doomed] = await q.enqueueMany(['ready', 'doomed']);
      const later = await q.enqueue({ html: '<script>alert(1)</script>' }, { delayMs: 3_600_000 });
      const first = await q.claimOne('w');
      expect(first?.id).toBe(ready);
      const second = await q.claimOne('w');
      await second!.fail(new Error('bad payload'));
      const ids = async (state: JobListState) => (await pageAll(store().admin(), q.name, state, 2)).map((j) => j.id);
      expect(await ids('scheduled')).toEqual([later]);
      expect(await ids('pending')).toEqual([later]);
      expect(await ids('processing')).toEqual([ready]);
      expect(await ids('dead')).toEqual([doomed]);
      expect(await ids('all')).toEqual([ready, doomed, later]);
      const dead = (await store().admin().listJobs(q.name, { state: 'dead' })).jobs[0]!;
      expect(dead).toMatchObject({ state: 'dead', lastError: expect.stringContaining('bad payload'), attempts: 1 });
      const sched = (await store().admin().listJobs(q.name, { state: 'scheduled' })).jobs[0]!;
      expect(sched.payload).toEqual({ html: '<script>alert(1)</script>' });
    });

    it('refuses a cursor of another state, a tampered cursor and an unknown state before any I/O', async () => {
      const q = store().queue(uid('adm-cursor'));
      await q.enqueueMany([1, 2, 3]);
      const page = await store().admin().listJobs(q.name, { state: 'all', limit: 1 });
      expect(page.next).not.toBeNull();
      await expectError(() => store().admin().listJobs(q.name, { state: 'dead', cursor: page.next! }), InvalidArgument);
      await expectError(
        () => store().admin().listJobs(q.name, { state: 'all', cursor: 'not-a-cursor' }),
        InvalidArgument,
      );
      await expectError(
        () =>
          store()
            .admin()
            .listJobs(q.name, { state: 'bogus' as JobListState }),
        InvalidArgument,
      );
      await expectError(() => store().admin().listJobs(q.name, { limit: 0 }), InvalidArgument);
      await expectError(() => store().admin().listJobs('', {}), InvalidName);
    });
  });

  describe('dead letters in bulk', () => {
    it('redrives every dead job of a queue with attempts reset, and purges every one', async () => {
      const q = store().queue(uid('adm-bulk'), { maxAttempts: 1 });
      await q.enqueueMany([1, 2, 3]);
      for (const j of await q.claimBatch(3, 'w')) await j.fail('x');
      expect((await q.stats()).dead).toBe(3);
      expect(await store().admin().retryAllDead(q.name)).toEqual({ moved: 3, conflicts: 0, conflictIds: [] });
      const again = await q.claimBatch(3, 'w');
      expect(again.map((j) => j.attempts)).toEqual([1, 1, 1]);
      for (const j of again) await j.fail('y');
      expect(await store().admin().purgeAllDead(q.name)).toBe(3);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    /** Dead jobs of `q` with the given unique keys (one each), in enqueue order. */
    async function deadWithKeys(q: ReturnType<Store['queue']>, keys: readonly (string | null)[]): Promise<number[]> {
      const ids: number[] = [];
      for (const k of keys) ids.push(await q.enqueue({ k }, k === null ? {} : { uniqueKey: k }));
      for (const j of await q.claimBatch(keys.length, 'w')) await j.fail('x');
      for (const id of ids) expect(await q.getJob(id)).toMatchObject({ state: 'dead' });
      return ids;
    }

    it('a redrive redrives what it can and reports, by id, the dead jobs whose unique key a live job holds', async () => {
      const q = store().queue(uid('adm-held'), { maxAttempts: 1 });
      const [a, b, c] = await deadWithKeys(q, ['k1', 'k2', null]);
      // A live job takes k1 again: dead job a cannot come back without two live jobs on one key.
      const holder = await q.enqueue({ holder: true }, { uniqueKey: 'k1' });
      expect(await q.retryDead([c!, a!, b!])).toEqual({ moved: 2, conflicts: 1, conflictIds: [a] });
      expect(await q.getJob(a!)).toMatchObject({ state: 'dead' });
      expect(await q.getJob(b!)).toMatchObject({ state: 'pending', attempts: 0 });
      expect(await q.getJob(c!)).toMatchObject({ state: 'pending' });
      expect((await q.getJobByKey('k1'))?.id).toBe(holder);
      // Once the holder is gone, the conflicting job redrives.
      expect(await q.cancel(holder)).toBe(true);
      expect(await q.retryDead([a!])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      expect((await q.getJobByKey('k1'))?.id).toBe(a);
    });

    it('two dead jobs of one unique key: the redrive brings back the older one and reports the other', async () => {
      const q = store().queue(uid('adm-twin'), { maxAttempts: 1 });
      const [a] = await deadWithKeys(q, ['twin']);
      const [b] = await deadWithKeys(q, ['twin']);
      expect(await q.retryDead([b!, a!])).toEqual({ moved: 1, conflicts: 1, conflictIds: [b] });
      expect((await q.getJobByKey('twin'))?.id).toBe(a);
    });

    it('retryAllDead redrives the rest of the queue past held keys and reports every conflict', async () => {
      const q = store().queue(uid('adm-all-held'), { maxAttempts: 1 });
      const ids = await deadWithKeys(q, ['h1', null, 'h2', 'free', null]);
      await q.enqueue({ holder: 1 }, { uniqueKey: 'h1' });
      await q.enqueue({ holder: 2 }, { uniqueKey: 'h2' });
      expect(await store().admin().retryAllDead(q.name)).toEqual({
        moved: 3,
        conflicts: 2,
        conflictIds: [ids[0], ids[2]],
      });
      expect(await q.stats()).toMatchObject({ pending: 5, dead: 2 });
      // Nothing left to redrive but the two held ones: the same answer, nothing moved.
      expect(await store().admin().retryAllDead(q.name)).toEqual({
        moved: 0,
        conflicts: 2,
        conflictIds: [ids[0], ids[2]],
      });
    });
  });

  describe('throughput', () => {
    it('counts completed, retried and dead outcomes per minute', async () => {
      const q = store().queue(uid('adm-tput'), { maxAttempts: 2 });
      const since = (await store().now()) - 60_000;
      await q.enqueueMany([1, 2, 3, 4]);
      const jobs = await q.claimBatch(4, 'w');
      await jobs[0]!.ack();
      expect(await q.ackBatch([jobs[1]!])).toBe(1);
      await jobs[2]!.retry('later', 0);
      await jobs[3]!.fail('never');
      const points = await store().admin().throughput(q.name, since);
      const sum = points.reduce(
        (a, p) => ({ completed: a.completed + p.completed, retried: a.retried + p.retried, dead: a.dead + p.dead }),
        { completed: 0, retried: 0, dead: 0 },
      );
      expect(sum).toEqual({ completed: 2, retried: 1, dead: 1 });
      expect(points.every((p) => p.queue === q.name && p.minute % 60_000 === 0)).toBe(true);
      // Each of the four attempts left its wait and run time (ack, ackBatch of our handle, retry, fail).
      const wait = sumLatency(points.map((p) => p.wait));
      const run = sumLatency(points.map((p) => p.run));
      expect([wait.count, run.count]).toEqual([4, 4]);
      expect(wait.buckets.reduce((a, n) => a + n, 0)).toBe(4);
      expect(run.buckets).toHaveLength(LATENCY_BOUNDS_MS.length + 1);
    });

    it('records wait (due to claim, database clock) and run (claim to outcome) per minute, from the run time of a delayed job', async () => {
      const q = store().queue(uid('adm-lat'));
      const since = (await store().now()) - 60_000;
      const id = await q.enqueue({ x: 1 }, { delayMs: 1_500 });
      const info = (await q.getJob(id))!;
      expect(info.runAt - info.enqueuedAt).toBe(1_500);
      const job = await waitFor('the delayed job', () => q.claimOne('w'), 30_000);
      const claimedAt = job.deadline - job.leaseMs;
      // Held for a while before the ack: the run time is at least that (a lower bound, not a speed).
      await new Promise((r) => setTimeout(r, 250));
      await job.ack();
      const points = (await store().admin().throughput(q.name, since)).filter((p) => p.run.count > 0);
      const wait = sumLatency(points.map((p) => p.wait));
      const run = sumLatency(points.map((p) => p.run));
      expect(wait.count).toBe(1);
      // From the run time, not the enqueue: 1.5 s less than enqueue to claim.
      expect(wait.sumMs).toBe(Math.max(0, claimedAt - info.runAt));
      expect(wait.buckets[latencyBucket(wait.sumMs)]).toBe(1);
      expect(run.count).toBe(1);
      expect(run.sumMs).toBeGreaterThanOrEqual(240);
      expect(run.buckets[latencyBucket(run.sumMs)]).toBe(1);
      expect(latencyQuantile(run, 0.5)).toBeGreaterThan(0);
    });
  });

  describe('streams, schedules, locks', () => {
    it('shows each stream head and each consumer lag', async () => {
      const s = store().stream(uid('adm-stream'));
      for (let i = 0; i < 5; i++) await s.publish(i);
      await s.saveOffset('slow', 2);
      await s.saveOffset('fast', 5);
      const info = (await store().admin().streams()).find((x) => x.name === s.name);
      expect(info).toEqual({
        name: s.name,
        headOffset: 5,
        consumers: [
          { consumer: 'fast', offset: 5, lag: 0 },
          { consumer: 'slow', offset: 2, lag: 3 },
        ],
      });
    });

    it('shows the scheduler leader lock', async () => {
      expect(await store().admin().lock('__alkstore_scheduler')).toBeNull();
      const ac = new AbortController();
      const running = store().runSchedules(ac.signal, { owner: 'leader-1' });
      const lock = await waitFor('leadership', () => store().admin().lock('__alkstore_scheduler'));
      expect(lock).toMatchObject({ owner: 'leader-1', expired: false });
      ac.abort();
      await running;
    });

    it('reports the LISTEN state', () => {
      expect(['connected', 'down', 'none']).toContain(store().admin().listener());
      if (engine.kind === 'sqlite') expect(store().admin().listener()).toBe('none');
      else expect(store().admin().listener()).toBe('connected');
    });
  });
}
