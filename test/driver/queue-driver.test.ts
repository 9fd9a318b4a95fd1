import { describe, expect, it } from '@jest/globals';
import { encodePayload } from '../../lib/contract/codec.js';
import { resolveJobStamp, type JobOpts, type JobWrite } from '../../lib/contract/options.js';
import type { Queue, Store } from '../../lib/contract/types.js';
import type { ClaimedRow, ClaimRef, QueueDriver } from '../../lib/engines/shared/queue-driver.js';
import { queueDriverOf } from '../../lib/engines/shared/queue.js';
import { contractEngines, waitFor, withEngineDb, type EngineFixture } from '../helpers/engines.js';

/**
 * The queue driver's own promises, one suite under both drivers (River's riverdrivertest): the
 * data operations the shared Queue handle and ClaimedJob are written over, called directly with
 * arguments already checked, as the handle calls them.
 */
function queueDriverSuite(engine: EngineFixture): void {
  let store: Store;
  withEngineDb(engine, (_db, s) => {
    store = s;
  });

  let n = 0;
  /** A fresh queue of the store and its driver. */
  const fresh = (prefix: string): { q: Queue; d: QueueDriver } => {
    n += 1;
    const q = store.queue(`drv-${prefix}-${n}`, { leaseMs: 30_000, backoffBaseMs: 250 });
    const d = queueDriverOf(q);
    if (d === null) throw new Error('the store handed out a queue handle without a driver');
    return { q, d };
  };
  const stamp = (q: Queue, opts?: JobOpts): JobWrite => resolveJobStamp(q.opts, opts);
  const text = (payload: unknown): string => encodePayload(payload, 'payload', 1 << 20);
  const ref = (row: ClaimedRow): ClaimRef => ({
    id: row.id,
    claimToken: row.claimToken,
    plain: row.orderingKey === null,
  });
  const stale = (row: ClaimedRow): ClaimRef => ({ ...ref(row), claimToken: `${row.claimToken}-stale` });

  describe('insert with the key rules', () => {
    it('inserts plain jobs in order and claims them in that order', async () => {
      const { q, d } = fresh('plain');
      const ids = await d.insert([text('a'), text('b')], stamp(q));
      const third = await d.insertOne(text('c'), stamp(q));
      expect(ids[1]!).toBeGreaterThan(ids[0]!);
      expect(third).toBeGreaterThan(ids[1]!);
      const c = await d.claim(10, null, 'w');
      expect(c.rows.map((r) => r.id)).toEqual([...ids, third]);
      expect(c.rows.map((r) => JSON.parse(r.payloadText) as unknown)).toEqual(['a', 'b', 'c']);
    });

    it('a live job holding the unique key wins; with replace a pending holder takes the new payload', async () => {
      const { q, d } = fresh('unique');
      const [first] = await d.insert([text('one')], stamp(q, { uniqueKey: 'k' }));
      expect(await d.insertOne(text('two'), stamp(q, { uniqueKey: 'k' }))).toBe(first);
      expect(await d.insertOne(text('three'), stamp(q, { uniqueKey: 'k', onConflict: 'replace' }))).toBe(first);
      expect((await d.getJobByKey('k'))!.payload).toBe('three');
    });

    it('a job behind a live job of its ordering key waits until that job ends', async () => {
      const { q, d } = fresh('ordering');
      const [a, b] = await d.insertBulk([
        { text: text('a'), stamp: stamp(q, { orderingKey: 'o' }) },
        { text: text('b'), stamp: stamp(q, { orderingKey: 'o' }) },
      ]);
      const first = await d.claim(10, null, 'w');
      expect(first.rows.map((r) => r.id)).toEqual([a]);
      expect(first.rows[0]!.orderingKey).toBe('o');
      expect(await d.ack(ref(first.rows[0]!))).toBe(true);
      const second = await d.claim(10, null, 'w');
      expect(second.rows.map((r) => r.id)).toEqual([b]);
    });
  });

  describe('claim', () => {
    it("reports the fields a job is built from: the stamp's lease and backoff, or the claim's lease override", async () => {
      const { q, d } = fresh('fields');
      await d.insertOne(text({ x: 1 }), stamp(q, { priority: 5, maxAttempts: 7, headers: { h: 'v' } }));
      await d.insertOne(text(2), stamp(q));
      const [row] = (await d.claim(1, null, 'w')).rows;
      expect(row).toMatchObject({
        queue: q.name,
        priority: 5,
        attempts: 1,
        maxAttempts: 7,
        leaseMs: 30_000,
        backoffBaseMs: 250,
        uniqueKey: null,
        orderingKey: null,
      });
      expect(JSON.parse(row!.payloadText)).toEqual({ x: 1 });
      expect(JSON.parse(row!.headersText!)).toEqual({ h: 'v' });
      expect(typeof row!.claimToken).toBe('string');
      expect((await d.getJob(row!.id))!.claimedUntil).toBe(row!.deadline);
      const [overridden] = (await d.claim(1, 5_000, 'w')).rows;
      expect(overridden!.leaseMs).toBe(5_000);
    });

    it('a short claim reports how long until the next delayed job falls due', async () => {
      const { q, d } = fresh('next-due');
      await d.insertOne(text('later'), stamp(q, { delayMs: 60_000 }));
      const c = await d.claim(5, null, 'w');
      expect(c.rows).toEqual([]);
      expect(c.nextDueInMs).not.toBeNull();
      expect(c.nextDueInMs!).toBeGreaterThan(0);
      expect(c.nextDueInMs!).toBeLessThanOrEqual(60_000);
    });

    it('a paused queue hands out nothing', async () => {
      const { q, d } = fresh('paused');
      await d.insertOne(text(1), stamp(q));
      await d.setPaused(true);
      expect((await d.claim(5, null, 'w')).rows).toEqual([]);
      await d.setPaused(false);
      expect((await d.claim(5, null, 'w')).rows).toHaveLength(1);
    });
  });

  describe('fenced outcomes', () => {
    it('every fenced operation refuses a token that is not the claim of the job', async () => {
      const { q, d } = fresh('stale');
      await d.insertOne(text(1), stamp(q));
      const [row] = (await d.claim(1, null, 'w')).rows;
      const bad = stale(row!);
      expect(await d.ack(bad)).toBe(false);
      expect(await d.ackBatch([bad])).toBe(0);
      expect(await d.retry(bad, 0, 'e')).toBeNull();
      expect(await d.fail(bad, 'e')).toBe(false);
      expect(await d.heartbeat(bad, 10_000)).toBeNull();
      expect(await d.release(bad)).toBe(false);
      // Nothing of those landed: the job is still processing under its claim.
      expect((await d.getJob(row!.id))!).toMatchObject({
        state: 'processing',
        claimedUntil: row!.deadline,
        lastError: null,
      });
    });

    it('a claim whose lease lapsed and was reclaimed is refused; the new claim is honoured', async () => {
      const { q, d } = fresh('lapsed');
      await d.insertOne(text(1), stamp(q));
      const [old] = (await d.claim(1, 1, 'w1')).rows;
      const again = await waitFor('the lapsed job to be reclaimed', async () => (await d.claim(1, null, 'w2')).rows[0]);
      expect(again.id).toBe(old!.id);
      expect(again.attempts).toBe(2);
      expect(await d.ack(ref(old!))).toBe(false);
      expect(await d.ack(ref(again))).toBe(true);
      expect(await d.getJob(old!.id)).toBeNull();
    });

    it('retry puts the job back pending after the delay, and on the last attempt dead-letters it', async () => {
      const { q, d } = fresh('retry');
      await d.insertOne(text(1), stamp(q, { maxAttempts: 2 }));
      const [first] = (await d.claim(1, null, 'w')).rows;
      expect(await d.retry(ref(first!), 0, 'boom')).toBe('retried');
      expect(await d.getJob(first!.id)).toMatchObject({ state: 'pending', attempts: 1, lastError: 'boom' });
      const [second] = (await d.claim(1, null, 'w')).rows;
      expect(second!.attempts).toBe(2);
      expect(await d.retry(ref(second!), 0, 'again')).toBe('dead');
      expect(await d.getJob(first!.id)).toMatchObject({ state: 'dead', lastError: 'again' });
    });

    it('fail dead-letters at once, keeping the error', async () => {
      const { q, d } = fresh('fail');
      await d.insertOne(text(1), stamp(q));
      const [row] = (await d.claim(1, null, 'w')).rows;
      expect(await d.fail(ref(row!), 'bad')).toBe(true);
      expect(await d.getJob(row!.id)).toMatchObject({ state: 'dead', lastError: 'bad' });
      expect((await d.listDead(null, null, 10)).map((j) => j.id)).toEqual([row!.id]);
    });

    it('heartbeat sets the deadline to now + extendMs and resolves to it', async () => {
      const { q, d } = fresh('heartbeat');
      await d.insertOne(text(1), stamp(q));
      const [row] = (await d.claim(1, 1_000, 'w')).rows;
      const deadline = await d.heartbeat(ref(row!), 120_000);
      expect(deadline).not.toBeNull();
      expect(deadline!).toBeGreaterThan(row!.deadline);
      expect((await d.getJob(row!.id))!.claimedUntil).toBe(deadline);
    });

    it('release gives the job back pending with the attempt its claim consumed', async () => {
      const { q, d } = fresh('release');
      await d.insertOne(text(1), stamp(q));
      const [row] = (await d.claim(1, null, 'w')).rows;
      expect(await d.release(ref(row!))).toBe(true);
      expect(await d.getJob(row!.id)).toMatchObject({ state: 'pending', attempts: 0, claimedUntil: null });
      expect(await d.release(ref(row!))).toBe(false);
      expect((await d.claim(1, null, 'w')).rows[0]!.attempts).toBe(1);
    });

    it('ackBatch deletes the jobs still ours and counts them, plain and keyed alike', async () => {
      const { q, d } = fresh('ack-batch');
      await d.insert([text(1), text(2)], stamp(q));
      await d.insertOne(text(3), stamp(q, { orderingKey: 'o' }));
      const rows = (await d.claim(10, null, 'w')).rows;
      expect(rows).toHaveLength(3);
      expect(await d.ackBatch([...rows.map(ref), stale(rows[0]!)])).toBe(3);
      expect((await d.stats()).processing).toBe(0);
    });
  });

  describe('local hand-off insert', () => {
    it('inserts a due plain job already claimed by the worker, and pending while the queue is paused', async () => {
      const { q, d } = fresh('handoff');
      const handed = await d.insertHandingOff(text('h'), stamp(q), 'taker', 4_000);
      expect(handed.claimed).toMatchObject({ id: handed.id, attempts: 1, leaseMs: 4_000, backoffBaseMs: 250 });
      expect(await d.ack(ref(handed.claimed!))).toBe(true);
      await d.setPaused(true);
      const pending = await d.insertHandingOff(text('p'), stamp(q), 'taker', 4_000);
      expect(pending.claimed).toBeNull();
      expect((await d.getJob(pending.id))!.state).toBe('pending');
    });
  });
}

for (const engine of contractEngines()) describe(`queue driver [${engine.name}]`, () => queueDriverSuite(engine));
