import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Closed } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineDb, EngineFixture } from '../helpers/engines.js';
import { expectError, pause, uid, within } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** Close (seed 002 failure surfaces, SPEC §3 `Closed`). Every test closes a store of its own. */
export function closeContract(engine: EngineFixture): void {
  let db: EngineDb | undefined;
  beforeAll(async () => {
    db = await engine.create();
  }, 60_000);
  afterAll(async () => {
    // Bounded, so an engine whose close hangs fails this file quickly instead of stalling the run.
    await within('destroying the database', 15_000, db?.destroy() ?? Promise.resolve());
  }, 60_000);
  const open = (): Promise<Store> => {
    if (!db) throw new Error('the database is not created (did beforeAll fail?)');
    return db.open();
  };

  describe('close', () => {
    it('after close every call rejects with Closed', async () => {
      const store = await open();
      const q = uid('close-q');
      await store.close();
      expect(store.closed).toBe(true);
      const calls: [string, () => unknown][] = [
        ['notify', () => store.notify('ch')],
        ['listen', () => store.listen('ch')],
        ['stream.publish', () => store.stream('s').publish(1)],
        ['stream.readSince', () => store.stream('s').readSince(0)],
        ['queue.enqueue', () => store.queue(q).enqueue(1)],
        ['queue.claimOne', () => store.queue(q).claimOne('w')],
        ['queue.stats', () => store.queue(q).stats()],
        ['outboxEnqueue', () => store.outboxEnqueue('ob', 1)],
        ['outbox.runOnce', () => store.outbox('ob').runOnce('w', async () => undefined)],
        ['tryLock', () => store.tryLock('l', 'o', 1_000)],
        ['schedule', () => store.schedule('sc', '@every 1s', q, 1)],
        ['unschedule', () => store.unschedule('sc')],
        ['getSchedule', () => store.getSchedule('sc')],
        ['runSchedules', () => store.runSchedules(new AbortController().signal)],
        ['withTx', () => store.withTx(async () => 1)],
        ['now', () => store.now()],
      ];
      for (const [label, call] of calls) {
        try {
          await expectError(call, Closed);
        } catch (err) {
          throw new Error(`${label}: ${(err as Error).message}`);
        }
      }
    });

    it('handles obtained before close refuse with Closed afterwards', async () => {
      const store = await open();
      const q = store.queue(uid('close-handles'));
      await q.enqueue(1);
      const job = (await q.claimOne('w'))!;
      const stream = store.stream(uid('close-stream'));
      const lock = (await store.tryLock(uid('close-lock'), 'o', 10_000))!;
      await within('close', 10_000, store.close());
      await expectError(() => q.enqueue(2), Closed);
      await expectError(() => q.getJob(job.id), Closed);
      await expectError(() => job.ack(), Closed);
      await expectError(() => stream.publish(1), Closed);
      await expectError(() => stream.getOffset('c'), Closed);
      await expectError(() => lock.renew(1_000), Closed);
    });

    it('close with an open transaction rolls it back and resolves; the transaction then refuses with Closed', async () => {
      const store = await open();
      const q = uid('close-tx');
      const tx = await openTx(store);
      await tx.enqueue(q, 'never committed');
      await within('close with an open transaction', 10_000, store.close());
      await expectError(() => tx.enqueue(q, 1), Closed);
      await expectError(() => tx.commit(), Closed);
      const other = await open();
      expect((await other.queue(q).stats()).pending).toBe(0);
    });

    it('open receivers and subscriptions end when the store closes', async () => {
      const store = await open();
      const wakes = store.listen(uid('close-ch'));
      const sub = store.stream(uid('close-sub')).subscribe('c');
      const pendingWake = wakes.recv();
      const pendingEvent = sub.next();
      const iterated = (async () => {
        const got: unknown[] = [];
        for await (const w of store.listen(uid('close-iter'))) got.push(w);
        return got;
      })();
      await pause(50);
      await within('close', 10_000, store.close());
      expect(await within('a pending recv after close', 5_000, pendingWake)).toBeNull();
      expect(await within('a pending next after close', 5_000, pendingEvent)).toBeNull();
      expect(await within('async iteration after close', 5_000, iterated)).toEqual([]);
      expect(wakes.closed).toBe(true);
      expect(sub.closed).toBe(true);
    });

    it('next() on a subscription called after the store closed resolves to null, as after its own close', async () => {
      const store = await open();
      const stream = store.stream(uid('close-after'));
      for (let i = 0; i < 3; i++) await stream.publish({ i });
      const reading = stream.subscribe('reader');
      expect((await reading.next())?.payload).toEqual({ i: 0 }); // two more are read ahead
      const idle = stream.subscribe('never-read');
      const receiver = store.listen(uid('close-after-ch'));
      await within('close', 10_000, store.close());
      expect(await within('next() of a subscription that had read', 5_000, reading.next())).toBeNull();
      expect(await within('next() of a subscription that never read', 5_000, idle.next())).toBeNull();
      expect(await within('recv() after close', 5_000, receiver.recv())).toBeNull();
      const iterated: unknown[] = [];
      for await (const e of idle) iterated.push(e);
      expect(iterated).toEqual([]);
      expect(reading.closed).toBe(true);
      expect(idle.closed).toBe(true);
      // Saving an offset is a write: it still refuses with Closed.
      await expectError(() => reading.saveOffset(1), Closed);
    });

    it('close is idempotent', async () => {
      const store = await open();
      await Promise.all([store.close(), store.close()]);
      await store.close();
      expect(store.closed).toBe(true);
    });

    it('closing one store leaves another store on the same database working', async () => {
      const a = await open();
      const b = await open();
      const q = uid('close-other');
      await a.queue(q).enqueue('before');
      await a.close();
      await b.queue(q).enqueue('after');
      expect((await b.queue(q).stats()).pending).toBe(2);
      expect(b.closed).toBe(false);
    });
  });
}
