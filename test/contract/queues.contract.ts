import { describe, expect, it } from '@jest/globals';
import { backoffRangeMs } from '../../lib/contract/backoff.js';
import { Codec } from '../../lib/contract/errors.js';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { type CodecVectors, loadVectors } from '../unit/vectors.js';
import { expectError, pause, uid, untilDbPasses, useEnv, waitFor } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** Claims until a job appears (a ready job may need a moment on a busy machine). */
async function claimSoon(q: Queue, workerId = 'w', timeoutMs = 10_000): Promise<Job> {
  return waitFor(`a claimable job on ${q.name}`, () => q.claimOne(workerId), timeoutMs, 10);
}

/** Claims everything ready, in claim order, one at a time. */
async function drainOrder(q: Queue): Promise<unknown[]> {
  const out: unknown[] = [];
  for (;;) {
    const j = await q.claimOne('w');
    if (!j) return out;
    out.push(j.payload);
    await j.ack();
  }
}

/** Queues (SPEC §5, seed 002 queues + verification backlog). */
export function queueContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('enqueue and claim', () => {
    it('hands every job out exactly once under concurrent claimers on two stores', async () => {
      const name = uid('q-race');
      const total = 2_000;
      const qa = env.store.queue(name);
      const qb = env.other.queue(name);
      const ids: number[] = [];
      const payloads = Array.from({ length: total }, (_, i) => ({ i }));
      for (let i = 0; i < total; i += 500) ids.push(...(await qa.enqueueMany(payloads.slice(i, i + 500))));
      expect(ids).toHaveLength(total);
      expect(new Set(ids).size).toBe(total);

      const seen = new Map<number, number>();
      const seenPayload = new Set<number>();
      let acked = 0;
      const claimer = async (q: Queue, worker: string, batch: boolean): Promise<void> => {
        let idle = 0;
        while (acked < total && idle < 200) {
          const jobs = batch
            ? await q.claimBatch(1 + Math.floor(Math.random() * 24), worker)
            : [await q.claimOne(worker)].filter((j): j is Job => j !== null);
          if (jobs.length === 0) {
            idle += 1;
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          idle = 0;
          for (const j of jobs) {
            seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
            seenPayload.add((j.payload as { i: number }).i);
            expect(j.attempts).toBe(1);
          }
          // Read the count first: `acked += await …` would lose updates across concurrent claimers.
          const n = await q.ackBatch(jobs);
          acked += n;
        }
      };
      await Promise.all([
        claimer(qa, 'a1', true),
        claimer(qa, 'a2', true),
        claimer(qa, 'a3', false),
        claimer(qa, 'a4', true),
        claimer(qb, 'b1', true),
        claimer(qb, 'b2', true),
        claimer(qb, 'b3', false),
        claimer(qb, 'b4', true),
      ]);
      const duplicates = [...seen].filter(([, n]) => n > 1);
      expect(duplicates).toEqual([]);
      expect(seen.size).toBe(total);
      expect(seenPayload.size).toBe(total);
      expect(acked).toBe(total);
      expect([...seen.keys()].sort((x, y) => x - y)).toEqual([...ids].sort((x, y) => x - y));
      const stats = await qa.stats();
      expect(stats).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('returns null (not an error) when there is no work', async () => {
      const q = store().queue(uid('q-empty'));
      expect(await q.claimOne('w')).toBeNull();
      expect(await q.claimBatch(10, 'w')).toEqual([]);
    });

    it('resolves enqueueMany to ids in payload order', async () => {
      const q = store().queue(uid('q-many'));
      const ids = await q.enqueueMany(['a', 'b', 'c']);
      expect(ids).toHaveLength(3);
      for (const [i, id] of ids.entries()) expect((await q.getJob(id))?.payload).toBe(['a', 'b', 'c'][i]);
      expect(await q.enqueueMany([])).toEqual([]);
    });

    it('claims by priority DESC, then ready time, then enqueue order', async () => {
      const q = store().queue(uid('q-order'));
      await q.enqueue('p0-first');
      await q.enqueue('p5-first', { priority: 5 });
      await q.enqueue('p0-second');
      await q.enqueue('pminus1', { priority: -1 });
      await q.enqueue('p5-second', { priority: 5 });
      const now = await store().now();
      // Enqueued last, but ready earliest among priority 0.
      await q.enqueue('p0-ready-earlier', { runAt: now - 60_000 });
      expect(await drainOrder(q)).toEqual([
        'p5-first',
        'p5-second',
        'p0-ready-earlier',
        'p0-first',
        'p0-second',
        'pminus1',
      ]);
    });

    it('claimBatch takes at most max, in claim order', async () => {
      const q = store().queue(uid('q-batch'));
      await q.enqueueMany([1, 2, 3, 4, 5]);
      await q.enqueue(0, { priority: 1 });
      const first = await q.claimBatch(3, 'w');
      expect(first.map((j) => j.payload)).toEqual([0, 1, 2]);
      const rest = await q.claimBatch(10, 'w');
      expect(rest.map((j) => j.payload)).toEqual([3, 4, 5]);
      expect(new Set([...first, ...rest].map((j) => j.claimToken)).size).toBe(6);
    });

    it('does not hand out a delayed job before its delay (delayMs)', async () => {
      const q = store().queue(uid('q-delay'));
      const id = await q.enqueue('later', { delayMs: 1_000 });
      const info = (await q.getJob(id))!;
      expect(info.runAt - info.enqueuedAt).toBeGreaterThanOrEqual(1_000);
      expect(info.runAt - info.enqueuedAt).toBeLessThanOrEqual(1_050);
      const early = await q.claimOne('w');
      const afterEarly = await store().now();
      if (afterEarly < info.runAt) expect(early).toBeNull();
      const job = early ?? (await claimSoon(q));
      expect(job.id).toBe(id);
      expect(await store().now()).toBeGreaterThanOrEqual(info.runAt);
    });

    it('does not hand out a job before its runAt', async () => {
      const q = store().queue(uid('q-runat'));
      const runAt = (await store().now()) + 1_000;
      const id = await q.enqueue('at', { runAt });
      expect((await q.getJob(id))!.runAt).toBe(runAt);
      const early = await q.claimOne('w');
      if ((await store().now()) < runAt) expect(early).toBeNull();
      const job = early ?? (await claimSoon(q));
      expect(job.id).toBe(id);
    });

    it('lets delayMs win over runAt', async () => {
      const q = store().queue(uid('q-delay-wins'));
      const now = await store().now();
      const id = await q.enqueue('now', { delayMs: 0, runAt: now + 3_600_000 });
      const info = (await q.getJob(id))!;
      expect(info.runAt).toBeLessThan(now + 60_000);
      expect((await claimSoon(q)).id).toBe(id);
    });

    it('never hands out an expired job', async () => {
      const q = store().queue(uid('q-expired-claim'));
      const id = await q.enqueue('x', { expiresInMs: 200, delayMs: 300 });
      const info = (await q.getJob(id))!;
      expect(info.expiresAt).not.toBeNull();
      await untilDbPasses(store(), Math.max(info.expiresAt!, info.runAt));
      expect(await q.claimOne('w')).toBeNull();
    });

    it('round-trips JSON payloads exactly (conformance/contract/codec.json)', async () => {
      const q = store().queue(uid('q-codec'));
      const { roundTrip } = loadVectors<CodecVectors>('codec.json');
      const ids = await q.enqueueMany(roundTrip.map((r) => r.value));
      for (const [i, id] of ids.entries()) expect((await q.getJob(id))!.payload).toEqual(roundTrip[i]!.value);
      const jobs = await q.claimBatch(roundTrip.length, 'w');
      expect(jobs.map((j) => j.payload)).toEqual(roundTrip.map((r) => r.value));
      expect(jobs[0]!.payloadAs<null>()).toBe(jobs[0]!.payload);
    });
  });

  describe('claims and handle fencing', () => {
    it('a claim increments attempts, issues a token and a deadline of now + visibility', async () => {
      const q = store().queue(uid('q-claim'), { leaseMs: 30_000 });
      const id = await q.enqueue({ hello: 'world' }, { priority: 2 });
      const t0 = await store().now();
      const j = (await q.claimOne('worker-1'))!;
      const t1 = await store().now();
      expect(j).toMatchObject({
        id,
        queue: q.name,
        payload: { hello: 'world' },
        priority: 2,
        attempts: 1,
        maxAttempts: 3,
      });
      expect(typeof j.claimToken).toBe('string');
      expect(j.claimToken.length).toBeGreaterThan(0);
      expect(j.deadline).toBeGreaterThanOrEqual(t0 + 30_000);
      expect(j.deadline).toBeLessThanOrEqual(t1 + 30_000);
      const info = (await q.getJob(id))!;
      expect(info).toMatchObject({ state: 'processing', attempts: 1, claimedUntil: j.deadline });
    });

    it('a per-claim visibilityTimeoutMs overrides the stamped one for that claim', async () => {
      const q = store().queue(uid('q-claim-vis'), { leaseMs: 300_000 });
      await q.enqueue(1);
      const t0 = await store().now();
      const j = (await q.claimOne('w', { leaseMs: 1_000 }))!;
      const t1 = await store().now();
      expect(j.deadline).toBeGreaterThanOrEqual(t0 + 1_000);
      expect(j.deadline).toBeLessThanOrEqual(t1 + 1_000);
    });

    it('a reclaim after the deadline consumes an attempt', async () => {
      const q = store().queue(uid('q-reclaim'), { leaseMs: 200 });
      const id = await q.enqueue('r');
      const first = (await q.claimOne('w1'))!;
      expect(first.attempts).toBe(1);
      await untilDbPasses(store(), first.deadline);
      const second = await claimSoon(q, 'w2');
      expect(second.id).toBe(id);
      expect(second.attempts).toBe(2);
      expect(second.claimToken).not.toBe(first.claimToken);
      expect((await q.getJob(id))!.attempts).toBe(2);
    });

    it('does not hand out a processing job before its deadline', async () => {
      const q = store().queue(uid('q-no-steal'), { leaseMs: 60_000 });
      await q.enqueue('mine');
      expect(await q.claimOne('w1')).not.toBeNull();
      expect(await q.claimOne('w2')).toBeNull();
      expect(await env.other.queue(q.name).claimOne('w3')).toBeNull();
    });

    it("refuses the earlier claimant's ack after a reclaim while the new claimant's ack lands", async () => {
      const q = store().queue(uid('q-fence'), { leaseMs: 200 });
      const id = await q.enqueue('f');
      const old = (await q.claimOne('w1'))!;
      await untilDbPasses(store(), old.deadline);
      const fresh = await claimSoon(env.other.queue(q.name), 'w2');
      expect(await old.ack()).toBe(false);
      expect(await old.heartbeat(10_000)).toBe(false);
      expect(await old.retry('late', 0)).toBe(false);
      expect(await old.fail('late')).toBe(false);
      expect(await old.release()).toBe(false);
      expect(await q.ackBatch([old])).toBe(0);
      expect((await q.getJob(id))!).toMatchObject({ state: 'processing', attempts: 2, lastError: null });
      expect(await fresh.ack()).toBe(true);
      expect(await q.getJob(id)).toBeNull();
    });

    it('refuses every handle op after the deadline lapsed, even without a reclaim', async () => {
      const q = store().queue(uid('q-lapsed'), { leaseMs: 200 });
      const id = await q.enqueue('l');
      const j = (await q.claimOne('w'))!;
      await untilDbPasses(store(), j.deadline);
      expect(await j.heartbeat(10_000)).toBe(false);
      expect(await j.ack()).toBe(false);
      expect(await j.retry('x', 0)).toBe(false);
      expect(await j.fail('x')).toBe(false);
      const info = (await q.getJob(id))!;
      expect(info.state).toBe('processing');
      expect(info.claimedUntil).toBe(j.deadline);
      expect(info.lastError).toBeNull();
    });

    it('an ack racing a reclaim at the deadline: never both win, and no ack lands after the deadline', async () => {
      const name = uid('q-ack-race');
      const q = store().queue(name);
      const rival = env.other.queue(name);
      // Every pairing of an ack before, at and after the 40 ms deadline with a rival that
      // arrives early, at the deadline or late (so some acks come after the deadline with
      // no reclaim yet: only the deadline in the fence can refuse those).
      const ackDelays = [25, 38, 42, 55];
      const rivalDelays = [0, 20, 45, 80];
      for (let round = 0; round < ackDelays.length * rivalDelays.length; round++) {
        const id = await q.enqueue(round);
        const j = (await q.claimOne('w1', { leaseMs: 40 }))!;
        const claimedAt = Date.now();
        const stopAt = claimedAt + 250;
        const reclaim = (async () => {
          await pause(rivalDelays[Math.floor(round / ackDelays.length)]!);
          while (Date.now() < stopAt) {
            const got = await rival.claimOne('w2', { leaseMs: 60_000 });
            if (got) return got;
          }
          return null;
        })();
        await pause(Math.max(0, claimedAt + ackDelays[round % ackDelays.length]! - Date.now()));
        const ackStart = await store().now();
        const acked = await j.ack();
        const reclaimed = await reclaim;
        // An ack that starts at or after the deadline (database clock) is refused, reclaimed or not.
        if (ackStart >= j.deadline)
          expect({ round, ackStart, deadline: j.deadline, acked }).toMatchObject({ acked: false });
        // Exactly one outcome: the ack landed (row gone, nothing to reclaim) or the rival owns the row.
        expect(acked && reclaimed !== null).toBe(false);
        if (acked) expect(await q.getJob(id)).toBeNull();
        if (reclaimed) {
          expect(reclaimed.id).toBe(id);
          expect(await reclaimed.ack()).toBe(true);
        }
        if (!acked && !reclaimed) {
          // The ack was late but the rival gave up first: the row is still there, unacked.
          expect(await q.getJob(id)).not.toBeNull();
          await q.cancel(id);
        }
      }
    });

    it('heartbeat sets the deadline to now + extend (absolute, not additive)', async () => {
      const q = store().queue(uid('q-hb'), { leaseMs: 60_000 });
      const id = await q.enqueue('h');
      const j = (await q.claimOne('w'))!;
      const original = j.deadline;
      const t0 = await store().now();
      expect(await j.heartbeat(5_000)).toBe(true);
      const t1 = await store().now();
      const until = (await q.getJob(id))!.claimedUntil!;
      expect(until).toBeGreaterThanOrEqual(t0 + 5_000);
      expect(until).toBeLessThanOrEqual(t1 + 5_000);
      // Additive would have been the 60 s deadline + 5 s.
      expect(until).toBeLessThan(original);
      // The handle reports the deadline of its last successful heartbeat.
      expect(j.deadline).toBe(until);
      // A heartbeat inside the new deadline keeps the job ours.
      expect(await j.heartbeat(30_000)).toBe(true);
      expect(await j.ack()).toBe(true);
    });

    it('a heartbeat can shorten a deadline (it replaces, never adds)', async () => {
      const q = store().queue(uid('q-hb-short'), { leaseMs: 60_000 });
      const id = await q.enqueue('h');
      const j = (await q.claimOne('w'))!;
      const original = j.deadline;
      expect(await j.heartbeat(200)).toBe(true);
      const until = (await q.getJob(id))!.claimedUntil!;
      expect(until).toBeLessThan(original);
      await untilDbPasses(store(), until);
      expect(await j.heartbeat(10_000)).toBe(false);
      const again = await claimSoon(q, 'w2');
      expect(again.attempts).toBe(2);
    });

    it('a late heartbeat is refused and leaves the row as it was', async () => {
      const q = store().queue(uid('q-hb-late'), { leaseMs: 200 });
      const id = await q.enqueue('h');
      const j = (await q.claimOne('w'))!;
      await untilDbPasses(store(), j.deadline);
      expect(await j.heartbeat(60_000)).toBe(false);
      expect((await q.getJob(id))!.claimedUntil).toBe(j.deadline);
      expect((await claimSoon(q, 'w2')).attempts).toBe(2);
    });

    it('ack deletes the job', async () => {
      const q = store().queue(uid('q-ack'));
      const id = await q.enqueue('a');
      const j = (await q.claimOne('w'))!;
      expect(await j.ack()).toBe(true);
      expect(await q.getJob(id)).toBeNull();
      expect(await j.ack()).toBe(false);
    });

    it('ackBatch counts only pairs that are still ours', async () => {
      const q = store().queue(uid('q-ackbatch'));
      await q.enqueueMany([1, 2, 3]);
      const [a, b, c] = await q.claimBatch(3, 'w');
      const n = await q.ackBatch([
        a!,
        b!,
        { id: c!.id, claimToken: 'not-the-token' },
        { id: 987_654_321, claimToken: 'x' },
      ]);
      expect(n).toBe(2);
      expect(await q.getJob(a!.id)).toBeNull();
      expect((await q.getJob(c!.id))!.state).toBe('processing');
      expect(await q.ackBatch([a!])).toBe(0);
      expect(await q.ackBatch([])).toBe(0);
      expect(await c!.ack()).toBe(true);
    });

    it('release returns the job to pending at once and gives the attempt back', async () => {
      const q = store().queue(uid('q-release'));
      const id = await q.enqueue('r');
      const j = (await q.claimOne('w'))!;
      expect(await j.release()).toBe(true);
      expect((await q.getJob(id))!).toMatchObject({ state: 'pending', attempts: 0, claimedUntil: null });
      const again = (await q.claimOne('w2'))!;
      expect(again.id).toBe(id);
      expect(again.attempts).toBe(1);
      expect(await j.ack()).toBe(false);
      expect(await again.ack()).toBe(true);
    });
  });

  describe('retry, fail and dead letters', () => {
    it('retry without a delay uses the equal-jitter backoff range of the attempt', async () => {
      const base = 200;
      const q = store().queue(uid('q-backoff'), { backoffBaseMs: base, maxAttempts: 5 });
      const id = await q.enqueue('b');
      for (let attempt = 1; attempt <= 3; attempt++) {
        const j = await claimSoon(q, 'w');
        expect(j.attempts).toBe(attempt);
        const t0 = await store().now();
        expect(await j.retry(new Error(`boom ${attempt}`))).toBe(true);
        const t1 = await store().now();
        const info = (await q.getJob(id))!;
        expect(info.state).toBe('pending');
        expect(info.attempts).toBe(attempt);
        expect(info.lastError).toContain(`boom ${attempt}`);
        expect(info.claimedUntil).toBeNull();
        const { min, max } = backoffRangeMs(attempt, base);
        // The delay was applied at a database instant between t0 and t1.
        expect(info.runAt - t0).toBeGreaterThanOrEqual(min);
        expect(info.runAt - t1).toBeLessThanOrEqual(max);
      }
    });

    it('retry with an explicit delay overrides the backoff', async () => {
      const q = store().queue(uid('q-retry-delay'), { backoffBaseMs: 1 });
      const id = await q.enqueue('d');
      const j = (await q.claimOne('w'))!;
      const t0 = await store().now();
      expect(await j.retry('later', 5_000)).toBe(true);
      const t1 = await store().now();
      const info = (await q.getJob(id))!;
      expect(info.runAt - t0).toBeGreaterThanOrEqual(5_000);
      expect(info.runAt - t1).toBeLessThanOrEqual(5_000);
      expect(info.lastError).toBe('later');
      expect(await q.claimOne('w')).toBeNull();
    });

    it('retry with delay 0 makes the job claimable again at once', async () => {
      const q = store().queue(uid('q-retry-0'));
      const id = await q.enqueue('z');
      const j = (await q.claimOne('w'))!;
      expect(await j.retry('again', 0)).toBe(true);
      const again = await claimSoon(q);
      expect(again.id).toBe(id);
      expect(again.attempts).toBe(2);
    });

    it('a retry at the last attempt moves the job to dead with its last error', async () => {
      const q = store().queue(uid('q-exhaust'), { maxAttempts: 2 });
      const id = await q.enqueue({ n: 1 });
      const first = (await q.claimOne('w'))!;
      expect(await first.retry('first failure', 0)).toBe(true);
      const second = await claimSoon(q);
      expect(second.attempts).toBe(2);
      expect(await second.retry(new Error('final failure'))).toBe(true);
      const info = (await q.getJob(id))!;
      expect(info).toMatchObject({ state: 'dead', attempts: 2, payload: { n: 1 } });
      expect(info.lastError).toContain('final failure');
      expect(info.diedAt).not.toBeNull();
      expect(await q.claimOne('w')).toBeNull();
    });

    it("a claimable row whose attempts are exhausted goes dead with 'max attempts exceeded'", async () => {
      const q = store().queue(uid('q-maxed'), { maxAttempts: 1, leaseMs: 200 });
      const id = await q.enqueue('m');
      const j = (await q.claimOne('w'))!;
      await untilDbPasses(store(), j.deadline);
      expect(await q.claimOne('w2')).toBeNull();
      const info = (await q.getJob(id))!;
      expect(info).toMatchObject({ state: 'dead', attempts: 1, lastError: 'max attempts exceeded' });
      expect(info.diedAt).not.toBeNull();
      expect(await j.ack()).toBe(false);
    });

    it('an exhausted row does not take the place of a claimable one in a batch', async () => {
      const q = store().queue(uid('q-maxed-batch'), { maxAttempts: 1, leaseMs: 200 });
      await q.enqueue('first', { priority: 9 });
      const j = (await q.claimOne('w'))!;
      await untilDbPasses(store(), j.deadline);
      await q.enqueueMany(['a', 'b']);
      const jobs = await q.claimBatch(2, 'w');
      expect(jobs.map((x) => x.payload)).toEqual(['a', 'b']);
      expect((await q.getJob(j.id))!.state).toBe('dead');
    });

    it('fail moves the job to dead at once, keeping the error', async () => {
      const q = store().queue(uid('q-fail'), { maxAttempts: 5 });
      const id = await q.enqueue('f');
      const j = (await q.claimOne('w'))!;
      expect(await j.fail(new Error('bad input'))).toBe(true);
      const info = (await q.getJob(id))!;
      expect(info).toMatchObject({ state: 'dead', attempts: 1, claimedUntil: null });
      expect(info.lastError).toContain('bad input');
      expect(info.diedAt).not.toBeNull();
      expect(await q.claimOne('w')).toBeNull();
      expect(await j.ack()).toBe(false);
      expect((await q.listDead()).map((d) => d.id)).toEqual([id]);
    });

    it('listDead pages by id ascending with before / after / limit', async () => {
      const q = store().queue(uid('q-dead-page'));
      const otherQ = store().queue(uid('q-dead-other'));
      await otherQ.enqueue('elsewhere');
      await (await otherQ.claimOne('w'))!.fail('other queue');
      const ids = await q.enqueueMany([0, 1, 2, 3, 4]);
      await q.enqueue('still pending', { priority: -1 });
      const jobs = await q.claimBatch(5, 'w');
      for (const j of jobs) expect(await j.fail(`dead ${String(j.payload)}`)).toBe(true);
      const all = await q.listDead();
      expect(all.map((d) => d.id)).toEqual(ids);
      expect(all.every((d) => d.state === 'dead' && d.queue === q.name)).toBe(true);
      const p1 = await q.listDead({ limit: 2 });
      const p2 = await q.listDead({ limit: 2, after: p1.at(-1)!.id });
      const p3 = await q.listDead({ limit: 2, after: p2.at(-1)!.id });
      const p4 = await q.listDead({ limit: 2, after: p3.at(-1)!.id });
      expect([p1, p2, p3, p4].map((p) => p.map((d) => d.id))).toEqual([
        ids.slice(0, 2),
        ids.slice(2, 4),
        ids.slice(4),
        [],
      ]);
      const diedAts = all.map((d) => d.diedAt!);
      expect(await q.listDead({ before: Math.min(...diedAts) })).toEqual([]);
      expect((await q.listDead({ before: Math.max(...diedAts) + 1 })).map((d) => d.id)).toEqual(ids);
    });

    it('retryDead resets attempts, keeps lastError and makes the job claimable again', async () => {
      const q = store().queue(uid('q-retrydead'), { maxAttempts: 1 });
      const id = await q.enqueue('again');
      const pendingId = await q.enqueue('pending', { delayMs: 3_600_000 });
      await (await q.claimOne('w'))!.fail('went wrong');
      expect(await q.retryDead([id, pendingId, 987_654_321])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      const info = (await q.getJob(id))!;
      expect(info).toMatchObject({ state: 'pending', attempts: 0, lastError: 'went wrong', diedAt: null });
      const j = await claimSoon(q);
      expect(j.id).toBe(id);
      expect(j.attempts).toBe(1);
      expect(await j.ack()).toBe(true);
      expect(await q.retryDead([])).toEqual({ moved: 0, conflicts: 0, conflictIds: [] });
    });

    it('purgeDead deletes dead rows only', async () => {
      const q = store().queue(uid('q-purge'));
      const deadId = await q.enqueue('dead');
      await (await q.claimOne('w'))!.fail('x');
      const pendingId = await q.enqueue('pending');
      expect(await q.purgeDead([deadId, pendingId])).toBe(1);
      expect(await q.getJob(deadId)).toBeNull();
      expect((await q.getJob(pendingId))!.state).toBe('pending');
      expect(await q.purgeDead([deadId])).toBe(0);
    });
  });

  describe('stamped options and job inspection', () => {
    it('getJob sees a pending job with the queue options stamped', async () => {
      const q = store().queue(uid('q-stamp'), {
        leaseMs: 12_345,
        maxAttempts: 7,
        backoffBaseMs: 777,
        deadLetterRetentionMs: 99_999,
        resultRetentionMs: 604_800_000,
      });
      expect(q.opts).toEqual({
        leaseMs: 12_345,
        maxAttempts: 7,
        backoffBaseMs: 777,
        deadLetterRetentionMs: 99_999,
        resultRetentionMs: 604_800_000,
        limitKeys: null,
      });
      const t0 = await store().now();
      const id = await q.enqueue({ a: [1] }, { priority: 3 });
      const t1 = await store().now();
      const info = (await q.getJob(id))!;
      expect(info).toEqual({
        id,
        queue: q.name,
        state: 'pending',
        payload: { a: [1] },
        priority: 3,
        attempts: 0,
        maxAttempts: 7,
        visibilityTimeoutMs: 12_345,
        backoffBaseMs: 777,
        deadLetterRetentionMs: 99_999,
        runAt: info.enqueuedAt,
        enqueuedAt: info.enqueuedAt,
        expiresAt: null,
        claimedUntil: null,
        lastError: null,
        diedAt: null,
        headers: {},
        uniqueKey: null,
        orderingKey: null,
        concurrencyKey: null,
        rateLimitKey: null,
      });
      expect(info.enqueuedAt).toBeGreaterThanOrEqual(t0);
      expect(info.enqueuedAt).toBeLessThanOrEqual(t1);
    });

    it('uses the defaults when the queue sets none (300 s, 3 attempts, 5 s base, keep forever)', async () => {
      const q = store().queue(uid('q-defaults'));
      const info = (await q.getJob(await q.enqueue(null)))!;
      expect(info).toMatchObject({
        visibilityTimeoutMs: 300_000,
        maxAttempts: 3,
        backoffBaseMs: 5_000,
        deadLetterRetentionMs: null,
        priority: 0,
        payload: null,
      });
    });

    it('per-job options override the queue options for that job only', async () => {
      const q = store().queue(uid('q-override'), { leaseMs: 10_000, maxAttempts: 2 });
      const id = await q.enqueue('o', {
        maxAttempts: 9,
        leaseMs: 4_000,
        backoffBaseMs: 10,
        expiresInMs: 600_000,
      });
      const plain = await q.enqueue('p');
      const info = (await q.getJob(id))!;
      expect(info).toMatchObject({ maxAttempts: 9, visibilityTimeoutMs: 4_000, backoffBaseMs: 10 });
      expect(info.expiresAt! - info.enqueuedAt).toBeGreaterThanOrEqual(600_000);
      expect(info.expiresAt! - info.enqueuedAt).toBeLessThanOrEqual(600_050);
      expect((await q.getJob(plain))!).toMatchObject({ maxAttempts: 2, visibilityTimeoutMs: 10_000, expiresAt: null });
    });

    it('stamps at enqueue: a later handle with other options does not change existing jobs', async () => {
      const name = uid('q-stamp-fixed');
      const q1 = store().queue(name, { maxAttempts: 4, leaseMs: 200 });
      const id = await q1.enqueue('s');
      const q2 = env.other.queue(name, { maxAttempts: 8, leaseMs: 60_000 });
      const j = (await q2.claimOne('w'))!;
      expect(j.maxAttempts).toBe(4);
      const t1 = await store().now();
      expect(j.deadline).toBeLessThanOrEqual(t1 + 200);
      expect((await q2.getJob(id))!).toMatchObject({ maxAttempts: 4, visibilityTimeoutMs: 200, state: 'processing' });
    });

    it('getJob resolves null for an unknown id', async () => {
      expect(await store().queue(uid('q-unknown')).getJob(987_654_321)).toBeNull();
    });

    it('cancel ends a live job as a cancelled record and deletes a dead one', async () => {
      const q = store().queue(uid('q-cancel'));
      const pending = await q.enqueue('p');
      expect(await q.cancel(pending)).toBe(true);
      expect((await q.getJob(pending))!.state).toBe('cancelled');
      expect(await q.cancel(pending)).toBe(false);
      const processingId = await q.enqueue('c');
      const j = (await q.claimOne('w'))!;
      expect(await q.cancel(processingId)).toBe(true);
      expect(await j.ack()).toBe(false);
      const deadId = await q.enqueue('d');
      await (await q.claimOne('w'))!.fail('x');
      expect(await q.cancel(deadId)).toBe(true);
      expect(await q.getJob(deadId)).toBeNull();
    });

    it('stats counts pending, processing and dead, and ages the oldest ready pending job', async () => {
      const q = store().queue(uid('q-stats'));
      expect(await q.stats()).toEqual({ pending: 0, processing: 0, dead: 0, scheduled: 0, oldestPendingAgeMs: 0 });
      const [aId, , cId] = await q.enqueueMany(['a', 'b', 'c']);
      const claimed = await q.claimBatch(2, 'w');
      expect(claimed[0]!.id).toBe(aId);
      expect(await claimed[0]!.fail('x')).toBe(true);
      await q.enqueue('not ready', { delayMs: 600_000 });
      expect(await q.stats()).toMatchObject({ pending: 2, processing: 1, dead: 1, scheduled: 1 });
      const ready = (await q.getJob(cId!))!.runAt;
      await untilDbPasses(store(), ready + 50);
      const s = await q.stats();
      expect(s).toMatchObject({ pending: 2, processing: 1, dead: 1, scheduled: 1 });
      expect(s.oldestPendingAgeMs).toBeGreaterThanOrEqual(50);
      expect(s.oldestPendingAgeMs).toBeLessThan(600_000);
    });

    it('stats stay exact through every state change, rollbacks and many small transactions', async () => {
      const q = store().queue(uid('q-stats-all'), { maxAttempts: 2, leaseMs: 600_000 });
      const expectStats = async (want: {
        pending: number;
        processing: number;
        dead: number;
        scheduled: number;
      }): Promise<void> => {
        expect(await q.stats()).toMatchObject(want);
      };
      // Many one-row statements, so the engines' folding of counters runs between them.
      for (let i = 0; i < 40; i++) {
        await q.enqueue({ i });
        const j = (await q.claimOne('w'))!;
        expect(await j.ack()).toBe(true);
      }
      await expectStats({ pending: 0, processing: 0, dead: 0, scheduled: 0 });
      const ids = await q.enqueueMany([1, 2, 3, 4, 5, 6]);
      await q.enqueue('later', { delayMs: 600_000 });
      await q.enqueue('later too', { delayMs: 600_000, priority: 3 });
      await expectStats({ pending: 8, processing: 0, dead: 0, scheduled: 2 });
      const [a, b, c, d, e] = await q.claimBatch(5, 'w');
      expect([a, b, c, d, e].map((j) => j!.id)).toEqual(ids.slice(0, 5));
      await expectStats({ pending: 3, processing: 5, dead: 0, scheduled: 2 });
      expect(await a!.heartbeat(600_000)).toBe(true);
      expect(await q.ackBatch([a!])).toBe(1);
      expect(await b!.retry('again', 600_000)).toBe(true);
      expect(await c!.fail('broken')).toBe(true);
      expect(await d!.release()).toBe(true);
      await expectStats({ pending: 5, processing: 1, dead: 1, scheduled: 3 });
      expect(await q.cancel(e!.id)).toBe(true);
      expect(await q.cancel(ids[5]!)).toBe(true);
      await expectStats({ pending: 4, processing: 0, dead: 1, scheduled: 3 });
      expect(await q.retryDead([c!.id])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      await expectStats({ pending: 5, processing: 0, dead: 0, scheduled: 3 });
      const both = await q.claimBatch(10, 'w');
      expect(both.map((j) => j.id).sort((x, y) => x - y)).toEqual([c!.id, d!.id]);
      await expectStats({ pending: 3, processing: 2, dead: 0, scheduled: 3 });
      expect(await both.find((j) => j.id === c!.id)!.retry('again', 0)).toBe(true);
      const last = await claimSoon(q);
      expect(last.id).toBe(c!.id);
      expect(await last.retry('attempts exhausted')).toBe(true);
      await expectStats({ pending: 3, processing: 1, dead: 1, scheduled: 3 });
      expect(await q.purgeDead([c!.id])).toBe(1);
      const tx = await openTx(store());
      await tx.enqueue(q.name, 'rolled back');
      await tx.enqueue(q.name, 'rolled back', { delayMs: 600_000 });
      await tx.rollback();
      await expectStats({ pending: 3, processing: 1, dead: 0, scheduled: 3 });
      const tx2 = await openTx(store());
      await tx2.enqueue(q.name, 'committed', { delayMs: 600_000 });
      await tx2.commit();
      await expectStats({ pending: 4, processing: 1, dead: 0, scheduled: 4 });
    });

    it('stats count a job due in a few seconds as scheduled, and no longer once it is cancelled', async () => {
      const q = store().queue(uid('q-stats-soon'));
      // Start early in a 10 s window of the database clock, so the job falls due within the same window.
      const start = await waitFor(
        'an early instant of a 10 s window',
        async () => {
          const now = await store().now();
          return now % 10_000 < 4_000 ? now : 0;
        },
        15_000,
        50,
      );
      const id = await q.enqueue('soon', { delayMs: 9_000 - (start % 10_000) });
      expect(await q.stats()).toMatchObject({ pending: 1, scheduled: 1, oldestPendingAgeMs: 0 });
      expect(await q.cancel(id)).toBe(true);
      expect(await q.stats()).toMatchObject({ pending: 0, scheduled: 0 });
    });

    it('stats age the oldest ready job across priorities and ignore jobs not yet due', async () => {
      const q = store().queue(uid('q-stats-prio'));
      await q.enqueue('low, due later', { priority: -5, delayMs: 600_000 });
      expect(await q.stats()).toMatchObject({ pending: 1, scheduled: 1, oldestPendingAgeMs: 0 });
      const oldId = await q.enqueue('old, low', { priority: -1 });
      await q.enqueue('high', { priority: 9 });
      await q.enqueue('high, due later', { priority: 9, delayMs: 600_000 });
      const oldAt = (await q.getJob(oldId))!.runAt;
      const now = await untilDbPasses(store(), oldAt + 60);
      const s = await q.stats();
      expect(s).toMatchObject({ pending: 4, scheduled: 2 });
      expect(s.oldestPendingAgeMs).toBeGreaterThanOrEqual(60);
      expect(s.oldestPendingAgeMs).toBeLessThanOrEqual(now - oldAt + 600_000);
    });
  });

  describe('expiry and retention sweep', () => {
    it('sweepExpired moves expired pending and processing rows to dead, and leaves others', async () => {
      const q = store().queue(uid('q-sweep'), { leaseMs: 600_000 });
      const processingId = await q.enqueue('processing', { expiresInMs: 300, priority: 1 });
      expect((await q.claimOne('w'))!.id).toBe(processingId);
      const pendingId = await q.enqueue('pending', { expiresInMs: 300, delayMs: 600_000 });
      const keepId = await q.enqueue('keep', { delayMs: 600_000 });
      const farId = await q.enqueue('far', { expiresInMs: 600_000, delayMs: 600_000 });
      const latest = Math.max((await q.getJob(processingId))!.expiresAt!, (await q.getJob(pendingId))!.expiresAt!);
      await untilDbPasses(store(), latest);
      const r = await q.sweepExpired();
      expect(r).toEqual({ expired: 2, purged: 0 });
      for (const id of [processingId, pendingId]) {
        const info = (await q.getJob(id))!;
        expect(info.state).toBe('dead');
        expect(info.diedAt).not.toBeNull();
      }
      expect((await q.getJob(keepId))!.state).toBe('pending');
      expect((await q.getJob(farId))!.state).toBe('pending');
      expect(await q.sweepExpired()).toEqual({ expired: 0, purged: 0 });
    });

    it('sweepExpired deletes dead rows past their retention and keeps rows within it', async () => {
      const q = store().queue(uid('q-retention'), { deadLetterRetentionMs: 300 });
      const keepQ = store().queue(q.name + '-keep', { deadLetterRetentionMs: 3_600_000 });
      const foreverQ = store().queue(q.name + '-forever');
      const shortId = await q.enqueue('short');
      await (await q.claimOne('w'))!.fail('x');
      const keepId = await keepQ.enqueue('keep');
      await (await keepQ.claimOne('w'))!.fail('x');
      const foreverId = await foreverQ.enqueue('forever');
      await (await foreverQ.claimOne('w'))!.fail('x');
      const diedAt = (await q.getJob(shortId))!.diedAt!;
      await untilDbPasses(store(), diedAt + 300);
      expect(await keepQ.sweepExpired()).toEqual({ expired: 0, purged: 0 });
      expect(await foreverQ.sweepExpired()).toEqual({ expired: 0, purged: 0 });
      expect(await q.sweepExpired()).toEqual({ expired: 0, purged: 1 });
      expect(await q.getJob(shortId)).toBeNull();
      expect((await keepQ.getJob(keepId))!.state).toBe('dead');
      expect((await foreverQ.getJob(foreverId))!.state).toBe('dead');
    });
  });

  describe('queue wakes', () => {
    it('listen wakes when a job becomes claimable: enqueue (also from another store), tx commit, retry, release', async () => {
      const name = uid('q-wake');
      const q = store().queue(name);
      const wakes = q.listen();
      const wake = async (what: string): Promise<void> => {
        if ((await wakes.recv(AbortSignal.timeout(10_000))) === null) throw new Error(`no queue wake after ${what}`);
        // Drop coalesced or repeated wakes so the next check needs a new one.
        while ((await wakes.recv(AbortSignal.timeout(100))) !== null) {
          /* drain */
        }
      };
      try {
        await env.other.queue(name).enqueue(1);
        await wake('an enqueue on another store');
        await env.other.withTx((tx) => tx.enqueue(name, 2));
        await wake('a transactional enqueue');
        const [a, b] = await q.claimBatch(2, 'w');
        await a!.retry('again', 0);
        await wake('a retry');
        await b!.release();
        await wake('a release');
      } finally {
        wakes.close();
      }
    });
  });

  describe('validation', () => {
    it('refuses a payload that does not survive JSON with Codec, writing nothing', async () => {
      const q = store().queue(uid('q-codec-err'));
      const cyclic: Record<string, unknown> = {};
      cyclic.me = cyclic;
      await expectError(() => q.enqueue(1n), Codec);
      await expectError(() => q.enqueue({ nested: [2n] }), Codec);
      await expectError(() => q.enqueue(cyclic), Codec);
      await expectError(() => q.enqueue(undefined), Codec);
      await expectError(() => q.enqueue(Number.NaN), Codec);
      await expectError(() => q.enqueueMany([1, 2, 3n]), Codec);
      expect(await q.stats()).toEqual({ pending: 0, processing: 0, dead: 0, scheduled: 0, oldestPendingAgeMs: 0 });
    });

    it('refuses bad numbers with RangeError', async () => {
      const name = uid('q-range');
      const q = store().queue(name);
      await expectError(() => store().queue(uid('q-bad'), { leaseMs: 0 }), RangeError);
      await expectError(() => store().queue(uid('q-bad'), { maxAttempts: 0 }), RangeError);
      await expectError(() => store().queue(uid('q-bad'), { backoffBaseMs: -1 }), RangeError);
      await expectError(() => q.enqueue(1, { delayMs: -1 }), RangeError);
      await expectError(() => q.enqueue(1, { delayMs: Number.NaN }), RangeError);
      await expectError(() => q.enqueue(1, { priority: 1.5 }), RangeError);
      await expectError(() => q.enqueue(1, { maxAttempts: 0 }), RangeError);
      await expectError(() => q.enqueue(1, { expiresInMs: 0 }), RangeError);
      await expectError(() => q.claimBatch(0, 'w'), RangeError);
      await expectError(() => q.claimBatch(1.5, 'w'), RangeError);
      await expectError(() => q.claimOne('w', { leaseMs: -5 }), RangeError);
      expect(await q.stats()).toMatchObject({ pending: 0 });
      await q.enqueue('ok');
      const j = (await q.claimOne('w'))!;
      await expectError(() => j.heartbeat(0), RangeError);
      await expectError(() => j.heartbeat(Number.NaN), RangeError);
      await expectError(() => j.retry('x', -1), RangeError);
      expect(await j.ack()).toBe(true);
    });
  });
}
