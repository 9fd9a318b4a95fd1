import { describe, expect, it } from '@jest/globals';
import { Codec, InvalidName } from '../../lib/contract/errors.js';
import { MAX_HEADERS_BYTES } from '../../lib/contract/job-extras.js';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { loadVectors, type QueueFeatureVectors } from '../unit/vectors.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';

/** Claims until a job appears. */
async function claimSoon(q: Queue, workerId = 'w', timeoutMs = 10_000): Promise<Job> {
  return waitFor(`a claimable job on ${q.name}`, () => q.claimOne(workerId), timeoutMs, 10);
}

/** Everything claimable right now, acked, in claim order (payloads). */
async function claimAll(q: Queue, max = 100): Promise<Job[]> {
  return q.claimBatch(max, 'w');
}

/** Headers, unique jobs, ordered keys, pause and rate limits (SPEC §10). */
export function queueFeaturesContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('headers', () => {
    it('travel with the job: Job.headers and JobInfo.headers, {} when none', async () => {
      const q = store().queue(uid('h'));
      const headers = {
        'correlation-id': 'c-1',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        名前: 'ß',
      };
      const id = await q.enqueue({ n: 1 }, { headers });
      const plain = await q.enqueue({ n: 2 });
      expect((await q.getJob(id))!.headers).toEqual(headers);
      expect((await q.getJob(plain))!.headers).toEqual({});
      const jobs = await q.claimBatch(2, 'w');
      expect(jobs.map((j) => j.headers)).toEqual([headers, {}]);
    });

    it('are accepted on enqueueMany, tx.enqueue, tx.outboxEnqueue, outboxEnqueue and outbox.enqueue', async () => {
      const name = uid('h-many');
      const q = store().queue(name);
      const h = { 'causation-id': 'x' };
      const ids = await q.enqueueMany([1, 2], { headers: h });
      const txId = await store().withTx((tx) => tx.enqueue(name, 3, { headers: h }));
      for (const id of [...ids, txId]) expect((await q.getJob(id))!.headers).toEqual(h);
      const ob = uid('h-outbox');
      const outbox = store().outbox(ob);
      const a = await store().withTx((tx) => tx.outboxEnqueue(ob, 'a', { headers: h }));
      const b = await store().outboxEnqueue(ob, 'b', { headers: h });
      const c = await outbox.enqueue('c', { headers: h });
      for (const id of [a, b, c]) expect((await outbox.queue.getJob(id))!.headers).toEqual(h);
      const claimed = await outbox.queue.claimBatch(3, 'w');
      expect(claimed.map((j) => j.headers)).toEqual([h, h, h]);
    });

    it('accepts and refuses the conformance vectors the same way on every entry point, writing nothing when refused', async () => {
      const v = loadVectors<QueueFeatureVectors>('queue-features.json');
      const name = uid('h-vectors');
      const ob = uid('h-vectors-outbox');
      const q = store().queue(name);
      const entries: ((h: unknown) => Promise<number>)[] = [
        (h) => q.enqueue(1, { headers: h as never }),
        async (h) => (await q.enqueueMany([1], { headers: h as never }))[0]!,
        (h) => store().withTx((tx) => tx.enqueue(name, 1, { headers: h as never })),
        (h) => store().withTx((tx) => tx.outboxEnqueue(ob, 1, { headers: h as never })),
        (h) => store().outboxEnqueue(ob, 1, { headers: h as never }),
      ];
      for (const h of v.headers.accept) {
        for (const enqueue of entries) {
          const id = await enqueue(h);
          const info = (await q.getJob(id)) ?? (await store().outbox(ob).queue.getJob(id));
          expect(info!.headers).toEqual(h);
        }
      }
      const before = [(await q.stats()).pending, (await store().outbox(ob).queue.stats()).pending];
      for (const c of v.headers.reject)
        for (const enqueue of entries) await expectError(() => enqueue(c.headers), RangeError);
      expect([(await q.stats()).pending, (await store().outbox(ob).queue.stats()).pending]).toEqual(before);
    });

    it('may hold 8 KB of names and values in all; more, or a non-string value, is refused before any write', async () => {
      const q = store().queue(uid('h-big'));
      const exact = { k: 'v'.repeat(MAX_HEADERS_BYTES - 1) };
      const id = await q.enqueue(null, { headers: exact });
      expect((await q.getJob(id))!.headers).toEqual(exact);
      await expectError(() => q.enqueue(null, { headers: { k: 'v'.repeat(MAX_HEADERS_BYTES) } }), RangeError);
      await expectError(() => q.enqueue(null, { headers: { k: 1 } as never }), RangeError);
      await expectError(() => q.enqueue(null, { headers: ['a'] as never }), RangeError);
      await expectError(
        () => store().withTx((tx) => tx.enqueue(q.name, null, { headers: { k: null } as never })),
        RangeError,
      );
      expect((await q.stats()).pending).toBe(1);
    });
  });

  describe('unique jobs', () => {
    it('a second enqueue with a live key writes nothing and returns the existing id (keep)', async () => {
      const q = store().queue(uid('u-keep'));
      const a = await q.enqueue({ v: 1 }, { uniqueKey: 'welcome:42' });
      const b = await q.enqueue({ v: 2 }, { uniqueKey: 'welcome:42' });
      const c = await q.enqueue({ v: 3 }, { uniqueKey: 'welcome:42', onConflict: 'keep' });
      expect(b).toBe(a);
      expect(c).toBe(a);
      const info = (await q.getJob(a))!;
      expect(info.payload).toEqual({ v: 1 });
      expect(info.uniqueKey).toBe('welcome:42');
      expect((await q.stats()).pending).toBe(1);
      // Other keys and other queues are independent.
      expect(await q.enqueue({ v: 4 }, { uniqueKey: 'welcome:43' })).not.toBe(a);
      expect(await store().queue(uid('u-other')).enqueue({ v: 5 }, { uniqueKey: 'welcome:42' })).not.toBe(a);
    });

    it("onConflict 'replace' replaces the payload, headers and run time of a pending job (debounce)", async () => {
      const q = store().queue(uid('u-replace'));
      const a = await q.enqueue({ v: 1 }, { uniqueKey: 'k', delayMs: 60_000, headers: { h: '1' } });
      const before = (await q.getJob(a))!;
      const b = await q.enqueue({ v: 2 }, { uniqueKey: 'k', onConflict: 'replace', delayMs: 0, headers: { h: '2' } });
      expect(b).toBe(a);
      const after = (await q.getJob(a))!;
      expect(after.payload).toEqual({ v: 2 });
      expect(after.headers).toEqual({ h: '2' });
      expect(after.runAt).toBeLessThan(before.runAt);
      const job = await claimSoon(q);
      expect(job.payload).toEqual({ v: 2 });
    });

    it("a processing job is never replaced: 'replace' returns its id and writes nothing", async () => {
      const q = store().queue(uid('u-proc'));
      const a = await q.enqueue({ v: 1 }, { uniqueKey: 'k' });
      const job = await claimSoon(q);
      expect(await q.enqueue({ v: 2 }, { uniqueKey: 'k', onConflict: 'replace' })).toBe(a);
      expect((await q.getJob(a))!.payload).toEqual({ v: 1 });
      expect((await q.stats()).pending).toBe(0);
      expect(await job.ack()).toBe(true);
    });

    it('the key is free again once the job is acked, cancelled or dead', async () => {
      const q = store().queue(uid('u-free'));
      const a = await q.enqueue(1, { uniqueKey: 'k' });
      expect(await (await claimSoon(q)).ack()).toBe(true);
      const b = await q.enqueue(2, { uniqueKey: 'k' });
      expect(b).not.toBe(a);
      expect(await q.cancel(b)).toBe(true);
      const c = await q.enqueue(3, { uniqueKey: 'k' });
      expect(c).not.toBe(b);
      expect(await (await claimSoon(q)).fail('nope')).toBe(true);
      const d = await q.enqueue(4, { uniqueKey: 'k' });
      expect(d).not.toBe(c);
      expect((await q.getJob(c))!.state).toBe('dead');
    });

    it('getJobByKey finds the live job; cancelByKey cancels it and frees the key', async () => {
      const q = store().queue(uid('u-lookup'));
      expect(await q.getJobByKey('k')).toBeNull();
      expect(await q.cancelByKey('k')).toBe(false);
      const a = await q.enqueue({ v: 1 }, { uniqueKey: 'k' });
      expect((await q.getJobByKey('k'))!.id).toBe(a);
      expect(await q.cancelByKey('k')).toBe(true);
      expect((await q.getJob(a))!.state).toBe('cancelled');
      expect(await q.getJobByKey('k')).toBeNull();
      const b = await q.enqueue({ v: 2 }, { uniqueKey: 'k' });
      expect(b).not.toBe(a);
      await expectError(() => q.getJobByKey(''), InvalidName);
      await expectError(() => q.cancelByKey('x'.repeat(1025)), InvalidName);
    });

    it('enqueueMany with a key behaves as enqueues in order: one job, every id the same', async () => {
      const q = store().queue(uid('u-many'));
      const keep = await q.enqueueMany([1, 2, 3], { uniqueKey: 'k' });
      expect(new Set(keep).size).toBe(1);
      expect((await q.getJob(keep[0]!))!.payload).toBe(1);
      const replace = await q.enqueueMany([4, 5], { uniqueKey: 'k', onConflict: 'replace' });
      expect(replace).toEqual([keep[0], keep[0]]);
      expect((await q.getJob(keep[0]!))!.payload).toBe(5);
      expect((await q.stats()).pending).toBe(1);
    });

    it('enqueueMany with a key returns one id while another store acks the holders', async () => {
      const name = uid('u-many-acked');
      const q = store().queue(name);
      const acking = env.other.queue(name);
      let stop = false;
      let acked = 0;
      // Claims and acks whatever holds the key, as fast as it can: holders end in the middle of calls.
      const acker = (async () => {
        while (!stop) {
          const job = await acking.claimOne('acker');
          if (job && (await job.ack())) acked += 1;
          // SQLite's calls finish without waiting on I/O: yield so the producer's writes get their turn.
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      const split: number[][] = [];
      try {
        for (let call = 0; call < 300; call++) {
          const ids = await q.enqueueMany(
            Array.from({ length: 16 }, (_, i) => ({ call, i })),
            { uniqueKey: 'k' },
          );
          expect(ids).toHaveLength(16);
          if (new Set(ids).size !== 1) split.push(ids);
        }
      } finally {
        stop = true;
        await acker;
      }
      expect(acked).toBeGreaterThan(0);
      expect(split).toEqual([]);
    }, 180_000);

    it('enqueueBulk gives each job its own key: duplicates in the batch and live holders resolve to the holder', async () => {
      const q = store().queue(uid('u-bulk'));
      const held = await q.enqueue({ user: 1 }, { uniqueKey: 'welcome:1' });
      const ids = await q.enqueueBulk([
        { payload: { user: 1 }, opts: { uniqueKey: 'welcome:1' } },
        { payload: { user: 2 }, opts: { uniqueKey: 'welcome:2', headers: { h: '2' } } },
        { payload: { user: 2, again: true }, opts: { uniqueKey: 'welcome:2' } },
        { payload: { user: 3 }, opts: { uniqueKey: 'welcome:3', onConflict: 'replace' } },
        { payload: { user: 3, latest: true }, opts: { uniqueKey: 'welcome:3', onConflict: 'replace' } },
        { payload: 'o1', opts: { orderingKey: 'o' } },
        { payload: 'o2', opts: { orderingKey: 'o', priority: 5 } },
        { payload: 'plain' },
      ]);
      expect(ids[0]).toBe(held);
      expect(ids[2]).toBe(ids[1]);
      expect(ids[4]).toBe(ids[3]);
      expect(new Set(ids).size).toBe(6);
      expect((await q.getJob(ids[1]!))!.headers).toEqual({ h: '2' });
      expect((await q.getJob(ids[3]!))!.payload).toEqual({ user: 3, latest: true });
      // o2 has the higher priority but waits behind o1 of its key.
      const claimed = await q.claimBatch(10, 'w');
      expect(claimed.map((j) => j.payload)).toEqual([
        { user: 1 },
        { user: 2 },
        { user: 3, latest: true },
        'o1',
        'plain',
      ]);
      expect(await q.enqueueBulk([])).toEqual([]);
    });

    it('enqueueBulk validates every item before any write', async () => {
      const q = store().queue(uid('u-bulk-bad'));
      await expectError(() => q.enqueueBulk([{ payload: 1 }, { payload: 2, opts: { uniqueKey: '' } }]), InvalidName);
      await expectError(
        () => q.enqueueBulk([{ payload: 1 }, { payload: 2, opts: { headers: { k: 1 } as never } }]),
        RangeError,
      );
      await expectError(() => q.enqueueBulk([{ payload: 1 }, 'nope' as never]), RangeError);
      await expectError(() => q.enqueueBulk([{ payload: 1 }, { payload: 10n }]), Codec);
      await expectError(() => q.enqueueBulk('nope' as never), RangeError);
      expect((await q.stats()).pending).toBe(0);
    });

    it('holds inside transactions: a rolled-back enqueue frees nothing and takes nothing', async () => {
      const name = uid('u-tx');
      const q = store().queue(name);
      // Rolled back: takes nothing.
      await expect(
        store().withTx(async (tx) => {
          await tx.enqueue(name, 'rolled back', { uniqueKey: 'k' });
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      const a = await q.enqueue('committed', { uniqueKey: 'k' });
      expect((await q.getJob(a))!.payload).toBe('committed');
      // A rolled-back replace changes nothing; a rolled-back cancel frees nothing.
      await expect(
        store().withTx(async (tx) => {
          expect(await tx.enqueue(name, 'replaced', { uniqueKey: 'k', onConflict: 'replace' })).toBe(a);
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      expect((await q.getJob(a))!.payload).toBe('committed');
      expect(await store().withTx((tx) => tx.enqueue(name, 'again', { uniqueKey: 'k' }))).toBe(a);
      expect((await q.stats()).pending).toBe(1);
    });

    it('tx.outboxEnqueue and outboxEnqueue honour the key on the outbox queue', async () => {
      const ob = uid('u-outbox');
      const a = await store().withTx((tx) => tx.outboxEnqueue(ob, 1, { uniqueKey: 'order:1' }));
      const b = await store().outboxEnqueue(ob, 2, { uniqueKey: 'order:1' });
      expect(b).toBe(a);
      expect((await store().outbox(ob).queue.stats()).pending).toBe(1);
    });

    it('20 concurrent enqueuers of one key in separate transactions on two stores create exactly one job', async () => {
      const name = uid('u-race');
      const stores = [env.store, env.other];
      const ids = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          stores[i % 2]!.withTx(async (tx) => {
            const id = await tx.enqueue(name, { i }, { uniqueKey: 'once' });
            await new Promise((r) => setTimeout(r, 2));
            return id;
          }),
        ),
      );
      expect(new Set(ids).size).toBe(1);
      expect((await store().queue(name).stats()).pending).toBe(1);
    });

    it('refuses a bad key or onConflict before any write', async () => {
      const q = store().queue(uid('u-bad'));
      await expectError(() => q.enqueue(1, { uniqueKey: '' }), InvalidName);
      await expectError(() => q.enqueue(1, { uniqueKey: 'a\u0000b' }), InvalidName);
      await expectError(() => q.enqueue(1, { uniqueKey: 'é'.repeat(513) }), InvalidName);
      await expectError(() => q.enqueue(1, { uniqueKey: 'k', onConflict: 'merge' as never }), RangeError);
      await expectError(() => q.enqueue(1, { onConflict: 'replace' }), RangeError);
      await expectError(() => q.enqueue(1, { orderingKey: '  ' }), InvalidName);
      expect((await q.stats()).pending).toBe(0);
    });
  });

  describe('ordered keys', () => {
    it('only the oldest live job of a key is claimable; keys do not block each other', async () => {
      const q = store().queue(uid('o-head'));
      const a1 = await q.enqueue('a1', { orderingKey: 'a' });
      await q.enqueue('a2', { orderingKey: 'a' });
      const b1 = await q.enqueue('b1', { orderingKey: 'b' });
      await q.enqueue('free');
      const first = await claimAll(q);
      expect(first.map((j) => j.payload)).toEqual(['a1', 'b1', 'free']);
      expect(first[0]!.orderingKey).toBe('a');
      expect(await claimAll(q)).toEqual([]);
      expect(await first[0]!.ack()).toBe(true);
      const next = await claimAll(q);
      expect(next.map((j) => j.payload)).toEqual(['a2']);
      expect(first[1]!.id).toBe(b1);
      expect(a1).toBe(first[0]!.id);
    });

    it('a retried head keeps its key blocked, and only its key; it is claimed again before the next', async () => {
      const q = store().queue(uid('o-retry'));
      await q.enqueue('a1', { orderingKey: 'a' });
      await q.enqueue('a2', { orderingKey: 'a' });
      await q.enqueue('b1', { orderingKey: 'b' });
      await q.enqueue('b2', { orderingKey: 'b' });
      const [a1, b1] = await claimAll(q);
      expect([a1!.payload, b1!.payload]).toEqual(['a1', 'b1']);
      // a1 waits an hour for its retry; key b keeps flowing meanwhile, key a does not.
      expect(await a1!.retry('flaky', 3_600_000)).toBe(true);
      expect(await b1!.ack()).toBe(true);
      const b2 = await claimAll(q);
      expect(b2.map((j) => j.payload)).toEqual(['b2']);
      expect(await b2[0]!.ack()).toBe(true);
      expect(await claimAll(q)).toEqual([]);
      expect((await q.getJob(a1!.id))!.state).toBe('pending');
      // Retried at once instead, a1 comes back before a2; a release keeps its place too.
      const id = a1!.id;
      expect(await q.cancel(id)).toBe(true);
      const a2 = await claimSoon(q);
      expect(a2.payload).toBe('a2');
      await q.enqueue('a3', { orderingKey: 'a' });
      expect(await a2.retry('flaky', 0)).toBe(true);
      const again = await claimSoon(q);
      expect(again.payload).toBe('a2');
      expect(await claimAll(q)).toEqual([]);
      expect(await again.release()).toBe(true);
      expect((await claimSoon(q)).payload).toBe('a2');
    });

    it("one ackBatch of several keys' heads makes each key's next job its head, and only that one", async () => {
      const q = store().queue(uid('o-batch'));
      for (const k of ['a', 'b', 'c']) for (const n of [1, 2, 3]) await q.enqueue(`${k}${n}`, { orderingKey: k });
      await q.enqueue('free');
      const heads = await claimAll(q);
      expect(heads.map((j) => j.payload).sort()).toEqual(['a1', 'b1', 'c1', 'free']);
      expect(await q.ackBatch(heads)).toBe(4);
      const next = await claimAll(q);
      expect(next.map((j) => j.payload).sort()).toEqual(['a2', 'b2', 'c2']);
      // The mixed batch: a head acked beside a job of another key that stays claimed.
      expect(await q.ackBatch([next[0]!, next[1]!])).toBe(2);
      const third = await claimAll(q);
      expect(third.map((j) => j.payload).sort()).toEqual(
        [next[0]!, next[1]!].map((j) => `${String(j.payload).slice(0, 1)}3`).sort(),
      );
      expect(await claimAll(q)).toEqual([]);
      expect(await next[2]!.ack()).toBe(true);
      expect((await claimAll(q)).map((j) => j.payload)).toEqual([`${String(next[2]!.payload).slice(0, 1)}3`]);
    });

    it('the next job becomes claimable when the head is cancelled or dead', async () => {
      const q = store().queue(uid('o-end'), { maxAttempts: 1 });
      const a1 = await q.enqueue('a1', { orderingKey: 'a' });
      const a2 = await q.enqueue('a2', { orderingKey: 'a' });
      await q.enqueue('a3', { orderingKey: 'a' });
      await q.enqueue('a4', { orderingKey: 'a' });
      // Cancelling a waiting job changes nothing for the head.
      expect(await q.cancel(a2)).toBe(true);
      expect(await q.cancel(a1)).toBe(true);
      const a3 = await claimSoon(q);
      expect(a3.payload).toBe('a3');
      expect(await a3.fail('boom')).toBe(true);
      const a4 = await claimSoon(q);
      expect(a4.payload).toBe('a4');
      // Exhausted by retry: dead, nothing left behind it.
      expect(await a4.retry('boom')).toBe(true);
      expect((await q.getJob(a4.id))!.state).toBe('dead');
      expect(await claimAll(q)).toEqual([]);
    });

    it('an expired head swept to dead unblocks the next', async () => {
      const q = store().queue(uid('o-expire'));
      await q.enqueue('old', { orderingKey: 'a', expiresInMs: 1 });
      await q.enqueue('next', { orderingKey: 'a' });
      await waitFor('the head to expire', async () => (await q.sweepExpired()).expired === 1, 10_000, 5);
      expect((await claimSoon(q)).payload).toBe('next');
    });

    it('a dead job retried from the dead letters waits behind the live head of its key', async () => {
      const q = store().queue(uid('o-dead'));
      await q.enqueue('a1', { orderingKey: 'a' });
      await q.enqueue('a2', { orderingKey: 'a' });
      const a1 = await claimSoon(q);
      expect(await a1.fail('x')).toBe(true);
      const a2 = await claimSoon(q);
      expect(a2.payload).toBe('a2');
      expect(await q.retryDead([a1.id])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
      expect(await claimAll(q)).toEqual([]);
      expect(await a2.ack()).toBe(true);
      expect((await claimSoon(q)).payload).toBe('a1');
    });

    it('a transaction enqueue takes its place in the key by enqueue order; a rolled-back one takes none', async () => {
      const name = uid('o-tx');
      const q = store().queue(name);
      await expect(
        store().withTx(async (tx) => {
          await tx.enqueue(name, 'ghost', { orderingKey: 'a' });
          throw new Error('rollback');
        }),
      ).rejects.toThrow('rollback');
      await store().withTx(async (tx) => {
        await tx.enqueue(name, 'a1', { orderingKey: 'a' });
        await tx.enqueue(name, 'a2', { orderingKey: 'a' });
      });
      const ids = await q.enqueueMany(['a3', 'a4'], { orderingKey: 'a' });
      expect(ids).toHaveLength(2);
      const seen: unknown[] = [];
      for (let i = 0; i < 4; i++) {
        const batch = await claimAll(q);
        expect(batch).toHaveLength(1);
        seen.push(batch[0]!.payload);
        expect(await batch[0]!.ack()).toBe(true);
      }
      expect(seen).toEqual(['a1', 'a2', 'a3', 'a4']);
    });

    it('10 workers on two stores drain 10 keys x 200 jobs: each key in enqueue order, never two at once', async () => {
      const name = uid('o-drain');
      const keys = 10;
      const perKey = 200;
      const producer = store().queue(name);
      const payloads: { k: number; n: number }[] = [];
      for (let n = 0; n < perKey; n++) for (let k = 0; k < keys; k++) payloads.push({ k, n });
      for (let i = 0; i < payloads.length; i += 500) {
        const chunk = payloads.slice(i, i + 500);
        // One enqueueMany per key keeps the batch ordered (its keys are shared by the batch).
        for (let k = 0; k < keys; k++) {
          const mine = chunk.filter((p) => p.k === k);
          if (mine.length > 0) await producer.enqueueMany(mine, { orderingKey: `key-${k}` });
        }
      }
      const done: number[][] = Array.from({ length: keys }, () => []);
      const running = new Array<number>(keys).fill(0);
      let overlap = 0;
      let finished = 0;
      const total = keys * perKey;
      const worker = async (q: Queue, w: number): Promise<void> => {
        let idle = 0;
        while (finished < total && idle < 2_000) {
          const jobs = await q.claimBatch(3, `w${w}`);
          if (jobs.length === 0) {
            idle++;
            await new Promise((r) => setTimeout(r, 2));
            continue;
          }
          idle = 0;
          await Promise.all(
            jobs.map(async (j) => {
              const p = j.payload as { k: number; n: number };
              if (++running[p.k]! > 1) overlap++;
              await new Promise((r) => setImmediate(r));
              done[p.k]!.push(p.n);
              running[p.k]!--;
              expect(await j.ack()).toBe(true);
              finished++;
            }),
          );
        }
      };
      const queues = [env.store.queue(name), env.other.queue(name)];
      await Promise.all(Array.from({ length: 10 }, (_, w) => worker(queues[w % 2]!, w)));
      expect(overlap).toBe(0);
      for (let k = 0; k < keys; k++) expect(done[k]).toEqual(Array.from({ length: perKey }, (_, n) => n));
    }, 120_000);
  });

  describe('pause and rate limit', () => {
    it('a paused queue hands out nothing on any store; in-flight jobs finish; resume hands out again', async () => {
      const name = uid('p');
      const q = store().queue(name);
      await q.enqueueMany([1, 2, 3]);
      const inFlight = await claimSoon(q);
      expect(await q.settings()).toMatchObject({ paused: false, rateLimit: null });
      await q.pause();
      expect(await q.settings()).toMatchObject({ paused: true, rateLimit: null });
      expect(await env.other.queue(name).settings()).toMatchObject({ paused: true });
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      expect(await env.other.queue(name).claimBatch(10, 'w')).toEqual([]);
      expect(await inFlight.ack()).toBe(true);
      const wake = env.other.queue(name).listen();
      await env.other.queue(name).resume();
      await wake.recv();
      wake.close();
      expect((await q.claimBatch(10, 'w')).map((j) => j.payload)).toEqual([2, 3]);
    });

    it('a rate limit caps claims per window across stores; null removes it', async () => {
      const name = uid('r');
      const q = store().queue(name);
      await q.enqueueMany(Array.from({ length: 20 }, (_, i) => i));
      await q.setRateLimit({ max: 5, perMs: 3_600_000 });
      expect(await q.settings()).toMatchObject({ paused: false, rateLimit: { max: 5, perMs: 3_600_000 } });
      const a = await q.claimBatch(3, 'w');
      const b = await env.other.queue(name).claimBatch(10, 'w');
      expect(a.length + b.length).toBe(5);
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      await q.setRateLimit(null);
      expect(await q.settings()).toMatchObject({ paused: false, rateLimit: null });
      expect(await q.claimBatch(100, 'w')).toHaveLength(15);
    });

    // A store may claim without reading the settings while its queue is backlogged and it has seen no
    // settings change (PostgreSQL: ClaimGate); another store's change then takes effect when its
    // notification arrives. The fence is a notify from the changing store after the change: wakes of
    // one database arrive in commit order, so once the fence is here the change has been seen.
    async function fenceAfter(change: () => Promise<void>): Promise<void> {
      const channel = uid('fence');
      const fence = store().listen(channel);
      try {
        await change();
        await env.other.notify(channel);
        const deadline = AbortSignal.timeout(15_000);
        for (;;) {
          const w = await fence.recv(deadline);
          if (w === null) throw new Error(`the fence wake on ${channel} did not arrive`);
          if (w.channel === channel) return;
        }
      } finally {
        fence.close();
      }
    }

    /** A backlog of `n` jobs on `name`, claimed here in full batches until claims skip the settings where the engine allows it. */
    async function backlogged(name: string, n: number): Promise<Queue> {
      const q = store().queue(name);
      await q.enqueueMany(Array.from({ length: n }, (_, i) => i));
      for (let i = 0; i < 3; i++) await q.ackBatch(await q.claimBatch(10, 'w')).then((acked) => expect(acked).toBe(10));
      return q;
    }

    it("a pause on another store stops this store's full-batch claims of a backlog once the pause's wake has arrived", async () => {
      const name = uid('p-backlog');
      const q = await backlogged(name, 300);
      await fenceAfter(() => env.other.queue(name).pause());
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      // Claims that skipped the settings keep the counters exact too.
      expect(await q.stats()).toMatchObject({ pending: 270, processing: 0, dead: 0 });
      await fenceAfter(() => env.other.queue(name).resume());
      expect(await q.claimBatch(10, 'w')).toHaveLength(10);
    });

    it("a rate limit set on another store caps this store's full-batch claims of a backlog once its wake has arrived", async () => {
      const name = uid('r-backlog');
      const q = await backlogged(name, 300);
      await fenceAfter(() => env.other.queue(name).setRateLimit({ max: 4, perMs: 3_600_000 }));
      expect(await q.claimBatch(10, 'w')).toHaveLength(4);
      expect(await q.claimBatch(10, 'w')).toEqual([]);
      await fenceAfter(() => env.other.queue(name).setRateLimit(null));
      expect(await q.claimBatch(10, 'w')).toHaveLength(10);
    });

    it('a worker draining a backlog in full batches stops within a deadline when another store pauses the queue', async () => {
      const name = uid('p-worker');
      const q = await backlogged(name, 3000);
      let stop = false;
      let emptyInARow = 0;
      const worker = (async () => {
        while (!stop) {
          const jobs = await q.claimBatch(10, 'w');
          emptyInARow = jobs.length === 0 ? emptyInARow + 1 : 0;
          if (jobs.length > 0) await q.ackBatch(jobs);
          else await new Promise((r) => setTimeout(r, 5));
        }
      })();
      try {
        await waitFor(
          'the worker to claim a few more batches',
          async () => (await q.stats()).pending < 2950,
          30_000,
          5,
        );
        await env.other.queue(name).pause();
        // Once it is empty it stays empty: the pause holds, and the backlog is still there.
        await waitFor('the worker to see the pause (5 empty claims in a row)', () => emptyInARow >= 5, 15_000, 5);
      } finally {
        stop = true;
        await worker;
      }
      expect((await q.stats()).pending).toBeGreaterThan(0);
      expect(await q.claimBatch(10, 'w')).toEqual([]);
    }, 60_000);

    it('a lapsed job out of attempts goes dead at the next claim even while a backlog keeps every claim full', async () => {
      const name = uid('bury');
      const q = store().queue(name);
      const doomed = await q.enqueue('doomed', { maxAttempts: 1 });
      const [held] = await q.claimBatch(1, 'w', { leaseMs: 300 });
      expect(held?.id).toBe(doomed);
      await q.enqueueMany(Array.from({ length: 400 }, (_, i) => i));
      for (let i = 0; i < 3; i++) expect(await q.claimBatch(10, 'w')).toHaveLength(10);
      await waitFor('the lease to lapse', async () => (await store().now()) > held!.deadline, 10_000, 20);
      expect(await q.claimBatch(10, 'w')).toHaveLength(10);
      expect(await q.getJob(doomed)).toMatchObject({ state: 'dead', lastError: 'max attempts exceeded' });
      expect(await q.stats()).toMatchObject({ pending: 400 - 40, processing: 40, dead: 1 });
    });

    it('refuses a bad rate limit before any write', async () => {
      const q = store().queue(uid('r-bad'));
      await expectError(() => q.setRateLimit({ max: 0, perMs: 1000 }), RangeError);
      await expectError(() => q.setRateLimit({ max: 1, perMs: 1.5 }), RangeError);
      await expectError(() => q.setRateLimit({ max: 1 } as never), RangeError);
      await expectError(() => q.setRateLimit(undefined as never), RangeError);
      expect(await q.settings()).toMatchObject({ paused: false, rateLimit: null });
    });
  });
}
