import { describe, expect, it } from '@jest/globals';
import type { Store, Wake, WakeReceiver } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { uid, useEnv } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** A wake within a generous deadline, or a failure naming the channel. */
async function wakeSoon(r: WakeReceiver, timeoutMs = 10_000): Promise<Wake> {
  const w = await r.recv(AbortSignal.timeout(timeoutMs));
  if (w === null) throw new Error(`no wake on ${JSON.stringify(r.channel)} within ${timeoutMs} ms`);
  return w;
}

/** The wake already waiting in `r`, if any, without waiting (an aborted signal never blocks). */
function waitingWake(r: WakeReceiver): Promise<Wake | null> {
  return r.recv(AbortSignal.abort());
}

/**
 * Everything `observer` could be woken by, committed before this call, has
 * reached it: another store commits a marker notify afterwards and `observer`
 * sees the marker. Wakes are delivered in commit order on both engines (one
 * LISTEN connection / one ordered wake log), so a wake not waiting by then
 * never comes.
 */
async function barrier(observer: Store, other: Store): Promise<void> {
  const marker = uid('marker');
  const r = observer.listen(marker);
  try {
    await other.notify(marker);
    await wakeSoon(r);
  } finally {
    r.close();
  }
}

/**
 * Wakes of a store's own commits (SPEC §7): both engines wake the committing
 * store's receivers in-process once the commit is done, other stores (other
 * processes) through the database, and never for a write that did not commit.
 */
export function notifyCommitContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('wakes of the store’s own commits', () => {
    it('an enqueue wakes its own store’s worker only once committed: on the wake another store can claim the job', async () => {
      const q = uid('q-own');
      const r = store().queue(q).listen();
      try {
        for (let i = 0; i < 5; i++) {
          const id = await store().queue(q).enqueue({ i });
          await wakeSoon(r);
          // No retry: the row must already be visible to another connection when the wake arrives.
          const job = await env.other.queue(q).claimOne('w');
          expect(job?.id).toBe(id);
          await job!.ack();
        }
      } finally {
        r.close();
      }
    });

    it('another store on the same database is woken by the enqueue too', async () => {
      const q = uid('q-cross');
      const mine = store().queue(q).listen();
      const theirs = env.other.queue(q).listen();
      try {
        await store().queue(q).enqueue({ n: 1 });
        expect(await wakeSoon(theirs)).toEqual({ channel: theirs.channel });
        expect(await wakeSoon(mine)).toEqual({ channel: mine.channel });
        await store()
          .queue(q)
          .enqueueMany([{ n: 2 }, { n: 3 }]);
        await wakeSoon(theirs);
        await wakeSoon(mine);
      } finally {
        mine.close();
        theirs.close();
      }
    });

    it('wakes from another store always reach this store, interleaved with its own', async () => {
      const q = uid('q-mixed');
      const r = store().queue(q).listen();
      try {
        for (let i = 0; i < 10; i++) {
          await store().queue(q).enqueue({ own: i });
          await wakeSoon(r);
          await env.other.queue(q).enqueue({ theirs: i });
          await wakeSoon(r);
        }
      } finally {
        r.close();
      }
    });

    it('one committed enqueue wakes its own store’s receiver once, not again when the database echoes it', async () => {
      const q = uid('q-once');
      const r = store().queue(q).listen();
      try {
        for (let i = 0; i < 3; i++) {
          await store().queue(q).enqueue({ i });
          await wakeSoon(r);
          await barrier(store(), env.other);
          expect(await waitingWake(r)).toBeNull();
        }
      } finally {
        r.close();
      }
    });

    it('a transactional enqueue wakes nobody before its commit resolves, then wakes both stores', async () => {
      const q = uid('q-tx');
      const mine = store().queue(q).listen();
      const theirs = env.other.queue(q).listen();
      try {
        const tx = await openTx(store());
        const id = await tx.enqueue(q, { in: 'tx' });
        // (No barrier here: on SQLite the open transaction holds the write lock another store's notify needs.)
        expect(await waitingWake(mine)).toBeNull();
        expect(await waitingWake(theirs)).toBeNull();
        await tx.commit();
        await wakeSoon(mine);
        await wakeSoon(theirs);
        const job = await env.other.queue(q).claimOne('w');
        expect(job?.id).toBe(id);
      } finally {
        mine.close();
        theirs.close();
      }
    });

    it('a rolled-back enqueue wakes no receiver of either store', async () => {
      const q = uid('q-rollback');
      const mine = store().queue(q).listen();
      const theirs = env.other.queue(q).listen();
      try {
        const tx = await openTx(store());
        await tx.enqueue(q, { in: 'tx' });
        await tx.rollback();
        await expect(
          store().withTx(async (t) => {
            await t.enqueue(q, { in: 'withTx' });
            throw new Error('callback fails');
          }),
        ).rejects.toThrow('callback fails');
        await barrier(store(), env.other);
        await barrier(env.other, store());
        expect(await waitingWake(mine)).toBeNull();
        expect(await waitingWake(theirs)).toBeNull();
        expect((await store().queue(q).stats()).pending).toBe(0);
      } finally {
        mine.close();
        theirs.close();
      }
    });

    it('job outcomes that make a job ready again wake the store’s own worker (retry, release, resume, retryDead)', async () => {
      const q = uid('q-again');
      const queue = store().queue(q);
      const r = queue.listen();
      try {
        await queue.enqueue({ n: 1 }, { maxAttempts: 1 });
        await wakeSoon(r);
        let job = await queue.claimOne('w');
        expect(await job!.release()).toBe(true);
        await wakeSoon(r);
        job = await queue.claimOne('w');
        expect(await job!.retry(new Error('once more'), 0)).toBe(true);
        // maxAttempts 1: the retry buried it; retryDead brings it back and wakes.
        const dead = await queue.listDead();
        expect(dead.map((d) => d.id)).toEqual([job!.id]);
        expect(await queue.retryDead([job!.id])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
        await wakeSoon(r);
        await queue.pause();
        await queue.resume();
        await wakeSoon(r);
        const again = await queue.claimOne('w');
        expect(again?.id).toBe(job!.id);
        await again!.ack();
      } finally {
        r.close();
      }
    });
  });
}
