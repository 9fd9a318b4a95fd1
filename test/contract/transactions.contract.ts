import { describe, expect, it } from '@jest/globals';
import { Codec, InvalidName, ReservedName } from '../../lib/contract/errors.js';
import type { Store, TxOps, WakeReceiver } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { openTx } from '../helpers/open-tx.js';
import { expectError, uid, useEnv } from './harness.js';

interface Names {
  queue: string;
  stream: string;
  channel: string;
  outbox: string;
}

function names(): Names {
  return { queue: uid('tx-q'), stream: uid('tx-s'), channel: uid('tx-ch'), outbox: uid('tx-ob') };
}

/** Does one of every transactional op; resolves to the job ids. */
async function everyOp(tx: TxOps, n: Names): Promise<{ jobId: number; outboxId: number; offsets: number[] }> {
  const jobId = await tx.enqueue(n.queue, { job: 1 }, { priority: 2 });
  const offsets = [await tx.publish(n.stream, 'unkeyed'), await tx.publishWithKey(n.stream, 'k', 'keyed')];
  await tx.notify(n.channel, 'hello');
  expect(await tx.saveOffset(n.stream, 'consumer', 5)).toBe(true);
  const outboxId = await tx.outboxEnqueue(n.outbox, { out: 1 });
  return { jobId, outboxId, offsets };
}

async function nothingVisible(store: Store, n: Names, wakes: WakeReceiver): Promise<void> {
  expect(await store.queue(n.queue).stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
  expect(await store.stream(n.stream).readSince(0)).toEqual([]);
  expect(await store.stream(n.stream).getOffset('consumer')).toBe(0);
  expect(await store.outbox(n.outbox).queue.stats()).toMatchObject({ pending: 0 });
  expect(await wakes.recv(AbortSignal.timeout(300))).toBeNull();
}

/** Transactions (seed 002 "the seam", the no-ghosts property, verification backlog *_tx items). */
export function transactionContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('transactions', () => {
    it('joinTransaction refuses what its open hands the body when it is no joinable transaction, with one message on both engines, before running fn', async () => {
      const idle = { isTransactionActive: false, query: async (): Promise<unknown> => [] };
      let ran = 0;
      const fn = async (): Promise<void> => void (ran += 1);
      const join = (joined: unknown): Promise<void> => store().joinTransaction((body) => body(joined as never), fn);
      const notJoined = `option joinTransaction(open) called its body with something else than { queryRunner, handle }`;
      // An EntityManager, a bare QueryRunner, nothing: not a { queryRunner, handle } pair.
      await expect(join({ queryRunner: { ...idle, isTransactionActive: true } })).rejects.toThrow(notJoined);
      await expect(join(idle)).rejects.toThrow(notJoined);
      await expect(join(null)).rejects.toThrow(notJoined);
      const inactive = 'option joinTransaction(open) called its body with a queryRunner that has no active transaction';
      await expect(join({ queryRunner: idle, handle: null })).rejects.toThrow(inactive);
      await expect(
        join({ queryRunner: { ...idle, isTransactionActive: true, isReleased: true }, handle: null }),
      ).rejects.toThrow(inactive);
      expect(ran).toBe(0);
    });

    it('rollback drops jobs, events (keyed and unkeyed), notifies and offset saves together', async () => {
      const n = names();
      const wakes = env.other.listen(n.channel);
      try {
        const tx = await openTx(store());
        expect(tx.finished).toBe(false);
        const { jobId, outboxId } = await everyOp(tx, n);
        await tx.rollback();
        expect(tx.finished).toBe(true);
        await nothingVisible(env.other, n, wakes);
        await nothingVisible(store(), n, wakes);
        expect(await store().queue(n.queue).getJob(jobId)).toBeNull();
        expect(await store().outbox(n.outbox).queue.getJob(outboxId)).toBeNull();
      } finally {
        wakes.close();
      }
    });

    it('commit makes all of them visible at once, and nothing is visible before', async () => {
      const n = names();
      const wakes = env.other.listen(n.channel);
      try {
        const tx = await openTx(store());
        const { jobId, outboxId, offsets } = await everyOp(tx, n);
        expect(offsets).toEqual([1, 2]);
        await nothingVisible(env.other, n, wakes);
        await tx.commit();
        expect(tx.finished).toBe(true);
        expect(await wakes.recv(AbortSignal.timeout(10_000))).toEqual({ channel: n.channel });
        expect((await env.other.queue(n.queue).getJob(jobId))!).toMatchObject({
          state: 'pending',
          payload: { job: 1 },
          priority: 2,
        });
        expect((await env.other.stream(n.stream).readSince(0)).map((e) => [e.offset, e.key, e.payload])).toEqual([
          [1, null, 'unkeyed'],
          [2, 'k', 'keyed'],
        ]);
        expect(await env.other.stream(n.stream).getOffset('consumer')).toBe(5);
        expect((await env.other.outbox(n.outbox).queue.getJob(outboxId))!).toMatchObject({
          state: 'pending',
          payload: { out: 1 },
          maxAttempts: 5,
        });
      } finally {
        wakes.close();
      }
    });

    it('a rolled-back publish leaves no gap: the next committed publish takes its offset', async () => {
      const s = uid('tx-gap');
      const tx = await openTx(store());
      expect(await tx.publish(s, 'ghost')).toBe(1);
      await tx.rollback();
      expect(await store().stream(s).publish('real')).toBe(1);
      expect((await store().stream(s).readSince(0)).map((e) => e.payload)).toEqual(['real']);
    });

    it('withTx(fn) commits on return and resolves to the return value', async () => {
      const n = names();
      const result = await store().withTx(async (tx) => {
        const id = await tx.enqueue(n.queue, 'w');
        await tx.publish(n.stream, 'w');
        return { id };
      });
      expect((await env.other.queue(n.queue).getJob(result.id))!.state).toBe('pending');
      expect(await env.other.stream(n.stream).readSince(0)).toHaveLength(1);
    });

    it('withTx(fn) rolls back on throw and rethrows the same error', async () => {
      const n = names();
      const wakes = env.other.listen(n.channel);
      try {
        const boom = new Error('business rule failed');
        let jobId = -1;
        await expect(
          store().withTx(async (tx) => {
            ({ jobId } = await everyOp(tx, n));
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect(jobId).toBeGreaterThan(0);
        await nothingVisible(env.other, n, wakes);
        expect(await store().queue(n.queue).getJob(jobId)).toBeNull();
      } finally {
        wakes.close();
      }
    });

    it('saveOffset in a transaction is monotone and lands only with the business write', async () => {
      const s = uid('tx-offset');
      const q = uid('tx-effect');
      for (let i = 1; i <= 3; i++) await store().stream(s).publish(i);
      const [event] = await store().stream(s).readFromConsumer('c', 1);
      // First attempt at "process event, record effect, save offset" fails: neither lands.
      await expect(
        store().withTx(async (tx) => {
          await tx.enqueue(q, { from: event!.offset });
          await tx.saveOffset(s, 'c', event!.offset);
          throw new Error('crash before commit');
        }),
      ).rejects.toThrow('crash before commit');
      expect(await store().stream(s).getOffset('c')).toBe(0);
      expect((await store().queue(q).stats()).pending).toBe(0);
      // The retry commits both.
      await store().withTx(async (tx) => {
        await tx.enqueue(q, { from: event!.offset });
        expect(await tx.saveOffset(s, 'c', event!.offset)).toBe(true);
        expect(await tx.saveOffset(s, 'c', 0)).toBe(false);
      });
      expect(await store().stream(s).getOffset('c')).toBe(1);
      expect((await store().queue(q).stats()).pending).toBe(1);
      expect(await store().withTx((tx) => tx.saveOffset(s, 'c', 1))).toBe(false);
      expect(await store().stream(s).getOffset('c')).toBe(1);
    });

    it('every transactional op rejects reserved and empty names before writing, and the transaction stays usable', async () => {
      const n = names();
      const tx = await openTx(store());
      const calls: [string, (name: string) => Promise<unknown>][] = [
        ['enqueue', (name) => tx.enqueue(name, 1)],
        ['publish', (name) => tx.publish(name, 1)],
        ['publishWithKey', (name) => tx.publishWithKey(name, 'k', 1)],
        ['notify', (name) => tx.notify(name)],
        ['saveOffset', (name) => tx.saveOffset(name, 'c', 1)],
        ['outboxEnqueue', (name) => tx.outboxEnqueue(name, 1)],
      ];
      try {
        for (const [, call] of calls) {
          for (const bad of ['__alkstore_x', '__alkstore_']) await expectError(() => call(bad), ReservedName);
          for (const bad of ['', ' ', '\t\n']) await expectError(() => call(bad), InvalidName);
        }
        await expectError(() => tx.publishWithKey(n.stream, '', 1), InvalidName);
        await expectError(() => tx.saveOffset(n.stream, '', 1), InvalidName);
        await expectError(() => tx.enqueue(n.queue, 1n), Codec);
        await expectError(() => tx.publish(n.stream, 1n), Codec);
        await expectError(() => tx.enqueue(n.queue, 1, { delayMs: -1 }), RangeError);
        // The transaction was not poisoned: a valid op still works and commits.
        const id = await tx.enqueue(n.queue, 'valid');
        await tx.commit();
        expect((await store().queue(n.queue).listDead()).length + (await store().queue(n.queue).stats()).pending).toBe(
          1,
        );
        expect((await store().queue(n.queue).getJob(id))!.payload).toBe('valid');
        expect(await store().stream(n.stream).readSince(0)).toEqual([]);
      } finally {
        if (!tx.finished) await tx.rollback();
      }
    });

    it('an operation on a finished transaction is refused', async () => {
      const n = names();
      const tx = await openTx(store());
      await tx.commit();
      await expectError(() => tx.enqueue(n.queue, 1), Error);
      await expectError(() => tx.publish(n.stream, 1), Error);
      expect((await store().queue(n.queue).stats()).pending).toBe(0);
      expect(await store().stream(n.stream).readSince(0)).toEqual([]);
    });

    it('transactions on two stores commit independently', async () => {
      const n = names();
      const a = await openTx(store());
      await a.enqueue(n.queue, 'a');
      await a.commit();
      const b = await openTx(env.other);
      await b.enqueue(n.queue, 'b');
      await b.rollback();
      const jobs = await store().queue(n.queue).claimBatch(10, 'w');
      expect(jobs.map((j) => j.payload)).toEqual(['a']);
    });
  });
}
