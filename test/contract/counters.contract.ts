import { describe, expect, it } from '@jest/globals';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { uid, untilDbPasses, useEnv, waitFor } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

interface Counts {
  pending: number;
  processing: number;
  dead: number;
  scheduled: number;
}

const LATER = 600_000;

/**
 * A queue's counts computed from its rows (every job through the admin pages),
 * as `stats()` defines them. Tests only use run times that are due or at least
 * minutes away, so `scheduled` cannot change between the two readings.
 */
async function countRows(store: Store, queue: string): Promise<Counts> {
  const now = await store.now();
  const c: Counts = { pending: 0, processing: 0, dead: 0, scheduled: 0 };
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const page = await store.admin().listJobs(queue, { state: 'all', limit: 1000, cursor });
    for (const j of page.jobs) {
      c[j.state as 'pending' | 'processing' | 'dead'] += 1;
      if (j.state === 'pending' && j.runAt > now) c.scheduled += 1;
    }
    if (page.next === null) return c;
    cursor = page.next;
  }
  throw new Error('too many pages');
}

/** Claims the job `id` (waiting for it to be claimable), with an optional lease. */
async function claimId(q: Queue, id: number, visibilityTimeoutMs?: number): Promise<Job> {
  const job = await waitFor(
    `job ${id} of ${q.name} claimable`,
    () => q.claimOne('w', visibilityTimeoutMs === undefined ? undefined : { leaseMs: visibilityTimeoutMs }),
    10_000,
    10,
  );
  expect(job.id).toBe(id);
  return job;
}

/**
 * stats() against the rows themselves after every jobs-changing API: a writer
 * that forgot its counter delta leaves the two apart at its step.
 */
export function countersContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('stats() counters', () => {
    it('match the rows after every operation that changes jobs', async () => {
      const queues: Queue[] = [];
      const checked: string[] = [];
      const check = async (step: string): Promise<void> => {
        checked.push(step);
        for (const q of queues) {
          const s = await q.stats();
          const got = {
            step,
            queue: q.name,
            pending: s.pending,
            processing: s.processing,
            dead: s.dead,
            scheduled: s.scheduled,
          };
          expect(got).toEqual({ step, queue: q.name, ...(await countRows(store(), q.name)) });
        }
      };
      const q = store().queue(uid('cnt'), { maxAttempts: 2, leaseMs: LATER });
      const lq = store().queue(uid('cnt-lapse'), { maxAttempts: 2, leaseMs: LATER });
      const eq = store().queue(uid('cnt-expire'), { leaseMs: LATER });
      const rq = store().queue(uid('cnt-retry'), { maxAttempts: 1, leaseMs: LATER });
      const bq = store().queue(uid('cnt-batch'), { leaseMs: LATER });
      const pq = store().queue(uid('cnt-purge'), { leaseMs: LATER, deadLetterRetentionMs: 0 });
      const box = uid('cnt-box');
      const oq = store().outbox(box).queue;
      queues.push(q, rq, bq, lq, eq, pq, oq);

      // Enqueues: one, many, bulk, delayed (a future bucket), prioritized.
      await q.enqueue('a');
      await q.enqueue('later', { delayMs: LATER });
      await q.enqueue('high', { priority: 5 });
      await check('enqueue');
      await q.enqueueMany(['m1', 'm2', 'm3']);
      await q.enqueueMany(['ml1', 'ml2'], { delayMs: LATER });
      await check('enqueueMany');
      await q.enqueueBulk([
        { payload: 'b1' },
        { payload: 'b2', opts: { delayMs: LATER } },
        { payload: 'b3', opts: { uniqueKey: 'bulk' } },
      ]);
      await check('enqueueBulk');

      // Unique keys: keep, replace, replace moving a delayed job's run time between buckets.
      const u = await q.enqueue('u', { uniqueKey: 'u1', delayMs: LATER });
      expect(await q.enqueue('u kept', { uniqueKey: 'u1' })).toBe(u);
      await check('unique keep');
      expect(await q.enqueue('u now', { uniqueKey: 'u1', onConflict: 'replace' })).toBe(u);
      await check('unique replace: a later bucket to due');
      expect(await q.enqueue('u later', { uniqueKey: 'u1', onConflict: 'replace', delayMs: 2 * LATER })).toBe(u);
      await check('unique replace: due to a later bucket');
      expect(await q.enqueue('u later still', { uniqueKey: 'u1', onConflict: 'replace', delayMs: 3 * LATER })).toBe(u);
      await check('unique replace: a later bucket to another');
      expect(await q.enqueueMany(['u many'], { uniqueKey: 'u1', onConflict: 'replace', delayMs: LATER })).toEqual([u]);
      await check('enqueueMany with a unique key');

      // Ordering keys: heads and blocked jobs, some delayed.
      const k1 = await q.enqueue('k1 head', { orderingKey: 'k1', priority: 9 });
      const k1b = await q.enqueue('k1 next', { orderingKey: 'k1', priority: 9 });
      await q.enqueue('k1 last', { orderingKey: 'k1', delayMs: LATER });
      await q.enqueueMany(['k2 head', 'k2 next'], { orderingKey: 'k2', priority: 8 });
      await check('ordered enqueues');

      // Claims of ready jobs (ordered heads first by priority).
      const first = await q.claimBatch(3, 'w');
      expect(first.map((j) => j.id)).toContain(k1);
      await check('claimBatch');
      const k1job = first.find((j) => j.id === k1)!;
      expect(await k1job.ack()).toBe(true);
      await check('ack of an ordered head (promotes the next)');
      for (const j of first.filter((x) => x.id !== k1)) expect(await j.ack()).toBe(true);
      await check('ack');
      const k1next = await claimId(q, k1b);
      expect(await k1next.fail('broken')).toBe(true);
      await check('fail of an ordered head (promotes a delayed job)');

      const batch = await q.claimBatch(6, 'w');
      expect(batch.length).toBe(6);
      await check('claimBatch of six');
      expect(await q.ackBatch(batch.slice(0, 2))).toBe(2);
      await check('ackBatch with an ordered job');
      await bq.enqueueMany(['p1', 'p2', 'p3']);
      const plain = await bq.claimBatch(3, 'w');
      expect(plain.length).toBe(3);
      expect(await bq.ackBatch(plain.slice(0, 2))).toBe(2);
      await check('ackBatch');
      expect(await batch[2]!.retry('again', 0)).toBe(true);
      await check('retry to pending, due');
      expect(await batch[3]!.retry('again', LATER)).toBe(true);
      await check('retry to pending, a later bucket');
      expect(await batch[4]!.release()).toBe(true);
      await check('release');
      expect(await q.cancel(batch[5]!.id)).toBe(true);
      await check('cancel of a processing job');

      // A job retried with its attempts exhausted goes dead.
      const r = await rq.enqueue('retried once');
      const once = await claimId(rq, r);
      expect(await once.retry('exhausted', 0)).toBe(true);
      expect((await rq.getJob(r))!.state).toBe('dead');
      await check('retry to dead');

      // Cancels of pending (due and later), dead, and by unique key.
      const c1 = await q.enqueue('cancel me');
      const c2 = await q.enqueue('cancel me later', { delayMs: LATER });
      expect(await q.cancel(c1)).toBe(true);
      expect(await q.cancel(c2)).toBe(true);
      await check('cancel of pending jobs');
      expect(await q.cancel(k1b)).toBe(true);
      await check('cancel of a dead job');
      expect(await q.cancelByKey('u1')).toBe(true);
      expect(await q.cancelByKey('bulk')).toBe(true);
      await check('cancelByKey');

      // Dead letters: retryDead, purgeDead, and the admin's bulk versions.
      await q.enqueueMany(['d1', 'd2', 'd3']);
      for (let i = 0; i < 3; i++) {
        const j = (await q.claimOne('w'))!;
        expect(await j.fail('x')).toBe(true);
      }
      await check('fail');
      const dead = await q.listDead();
      expect(dead.length).toBe(3);
      expect(await q.retryDead([dead[0]!.id])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      await check('retryDead');
      expect(await q.purgeDead([dead[1]!.id])).toBe(1);
      await check('purgeDead');
      expect(await store().admin().retryAllDead(q.name)).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      await check('admin retryAllDead');
      const j2 = (await q.claimOne('w'))!;
      expect(await j2.fail('x')).toBe(true);
      expect(await store().admin().purgeAllDead(q.name)).toBe(1);
      await check('admin purgeAllDead');

      // Lease lapse: re-claimed while attempts remain, buried dead by a claim once exhausted.
      const l = await lq.enqueue('lapse');
      const firstClaim = await claimId(lq, l, 100);
      await untilDbPasses(store(), firstClaim.deadline);
      await claimId(lq, l, 100);
      await check('lapsed lease re-claimed');
      await waitFor(
        'the exhausted lapsed job buried by a claim',
        async () => {
          await lq.claimOne('w');
          return (await lq.getJob(l))!.state === 'dead';
        },
        10_000,
        20,
      );
      await check('exhausted lapse buried');

      // Expiry (pending due, pending in a later bucket, processing) and retention purge.
      await eq.enqueue('expires pending', { expiresInMs: 200 });
      await eq.enqueue('expires later', { expiresInMs: 200, delayMs: LATER });
      const ep = await eq.enqueue('expires processing', { expiresInMs: 200, priority: 1 });
      await claimId(eq, ep);
      await eq.enqueue('stays', { delayMs: LATER });
      await pq.enqueue('expires and purged', { expiresInMs: 200 });
      await pq.enqueue('stays pending');
      await check('before expiry');
      await waitFor(
        'three expired',
        async () => {
          await eq.sweepExpired();
          return (await countRows(store(), eq.name)).dead === 3;
        },
        10_000,
        20,
      );
      await check('expire');
      await waitFor('one expired and purged', async () => (await pq.sweepExpired()).purged === 1, 10_000, 20);
      await check('expire and purge');

      // Transactions: rolled back and committed, plain, delayed and keyed.
      const tx = await openTx(store());
      await tx.enqueue(q.name, 'rolled back');
      await tx.enqueue(q.name, 'rolled back later', { delayMs: LATER });
      await tx.enqueue(q.name, 'rolled back keyed', { uniqueKey: 'tx' });
      await tx.outboxEnqueue(box, 'rolled back');
      await tx.rollback();
      await check('tx rolled back');
      await store().withTx(async (t) => {
        await t.enqueue(q.name, 'committed');
        await t.enqueue(q.name, 'committed later', { delayMs: LATER });
        await t.enqueue(q.name, 'committed keyed', { uniqueKey: 'tx', orderingKey: 'tx' });
        await t.outboxEnqueue(box, 'committed');
      });
      await check('tx committed');

      // Outbox-fed jobs.
      await store().outboxEnqueue(box, { n: 1 });
      await store().outboxEnqueue(box, { n: 2 }, { delayMs: LATER });
      await check('outboxEnqueue');

      // Many one-job round trips, so the counters' folding runs in between.
      for (let i = 0; i < 80; i++) {
        await q.enqueue({ i });
        const j = (await q.claimOne('w'))!;
        expect(await j.ack()).toBe(true);
      }
      await check('after many folds');
      expect(checked.length).toBeGreaterThan(30);
    }, 60_000);

    it('match the rows after concurrent producers and workers on two stores', async () => {
      const name = uid('cnt-conc');
      const opts = { maxAttempts: 2, leaseMs: LATER };
      const sides = [store().queue(name, opts), env.other.queue(name, opts)];
      const producers = sides.flatMap((q, s) =>
        [0, 1].map(async (p) => {
          for (let i = 0; i < 25; i++) {
            if (i % 5 === 4) await q.enqueueMany([`${s}${p}${i}a`, `${s}${p}${i}b`]);
            else await q.enqueue(`${s}${p}${i}`, i % 7 === 3 ? { delayMs: LATER } : undefined);
          }
        }),
      );
      let producing = true;
      const workers = sides.map(async (q, s) => {
        let n = 0;
        const ready = async (): Promise<boolean> => {
          const r = await countRows(store(), name);
          return r.pending > r.scheduled;
        };
        while (producing || (await ready())) {
          const jobs = await q.claimBatch(4, `w${s}`);
          const rest: Job[] = [];
          for (const j of jobs) {
            n += 1;
            if (n % 5 === 0) await j.retry('again', 0);
            else if (n % 7 === 0) await j.fail('broken');
            else rest.push(j);
          }
          if (rest.length > 0) expect(await q.ackBatch(rest)).toBe(rest.length);
        }
      });
      await Promise.all(producers);
      producing = false;
      await Promise.all(workers);
      const s = await sides[0]!.stats();
      const rows = await countRows(store(), name);
      expect({ pending: s.pending, processing: s.processing, dead: s.dead, scheduled: s.scheduled }).toEqual(rows);
      expect(rows.processing).toBe(0);
      expect(rows.dead).toBeGreaterThan(0);
      expect(rows.scheduled).toBeGreaterThan(0);
    }, 60_000);
  });
}
