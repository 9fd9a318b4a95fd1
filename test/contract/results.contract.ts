import { describe, expect, it } from '@jest/globals';
import {
  Codec,
  InvalidArgument,
  JobCancelled,
  JobDead,
  PayloadTooLarge,
  ResultTimeout,
} from '../../lib/contract/errors.js';
import { WAIT_HEADER } from '../../lib/contract/results.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';
import { claimSoon, startWorker, vectors } from './results-fixtures.js';

/** A promise that settles like `p`, its rejection handled at once (rethrown when awaited). */
function settled<T>(p: Promise<T>): () => Promise<T> {
  const r = p.then(
    (v) => ({ ok: true as const, v }),
    (e: unknown) => ({ ok: false as const, e }),
  );
  return async () => {
    const x = await r;
    if (x.ok) return x.v;
    throw x.e;
  };
}

/** Job results (SPEC §11): stored with the ack, read by id and by waiters in any process. */
export function resultsContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('ack(result)', () => {
    it('stores the result with the acked job: getJob shows it completed, with its result and finish time', async () => {
      const q = store().queue(uid('r'));
      const id = await q.enqueue({ n: 1 }, { uniqueKey: 'k', headers: { a: 'b' } });
      const job = await claimSoon(q);
      expect(await job.ack({ sum: 3, items: ['x'] })).toBe(true);
      const info = (await env.other.queue(q.name).getJob(id))!;
      expect(info.state).toBe('completed');
      expect(info.result).toEqual({ sum: 3, items: ['x'] });
      expect(info.payload).toEqual({ n: 1 });
      expect(info.headers).toEqual({ a: 'b' });
      expect(info.attempts).toBe(1);
      expect(typeof info.finishedAt).toBe('number');
      // A completed job no longer holds its unique key, nor counts as live.
      expect(await q.getJobByKey('k')).toBeNull();
      expect(await q.enqueue(2, { uniqueKey: 'k' })).not.toBe(id);
      expect((await q.stats()).processing).toBe(0);
    });

    it('without a result deletes the job as before (nothing recorded)', async () => {
      const q = store().queue(uid('r-plain'));
      const id = await q.enqueue(1);
      expect(await (await claimSoon(q)).ack()).toBe(true);
      expect(await q.getJob(id)).toBeNull();
    });

    it('stores null, 0 and "" as results (only undefined means none)', async () => {
      const q = store().queue(uid('r-falsy'));
      for (const value of [null, 0, '']) {
        const id = await q.enqueue(1);
        await (await claimSoon(q)).ack(value);
        expect((await q.getJob(id))!.result).toBe(value);
      }
    });

    it('refuses a result the codec refuses or over maxPayloadBytes before any write (the job stays processing)', async () => {
      const small = await env.db.open({ maxPayloadBytes: vectors.resultLimit.maxPayloadBytes });
      const q = small.queue(uid('r-limit'));
      for (const value of vectors.resultLimit.accept) {
        const id = await q.enqueue(1);
        expect(await (await claimSoon(q)).ack(value)).toBe(true);
        expect((await q.getJob(id))!.result).toEqual(value);
      }
      for (const value of vectors.resultLimit.tooLarge) {
        const id = await q.enqueue(1);
        const job = await claimSoon(q);
        const err = await expectError(() => job.ack(value), PayloadTooLarge);
        expect(err.message).toContain(`result of job ${id}`);
        expect((await q.getJob(id))!.state).toBe('processing');
        await job.ack();
      }
      const id = await q.enqueue(1);
      const job = await claimSoon(q);
      await expectError(() => job.ack({ big: 1n }), Codec);
      expect((await q.getJob(id))!.state).toBe('processing');
    });

    it("is fenced: a stale claim cannot ack with its result after a reclaim; the new claim's result stands", async () => {
      const q = store().queue(uid('r-fence'));
      const id = await q.enqueue(1);
      const old = await claimSoon(q, 'old', 50);
      const fresh = await waitFor('the lapsed job reclaimed', () => q.claimOne('new'), 10_000, 20);
      expect(await old.ack('stale')).toBe(false);
      expect(await fresh.ack('fresh')).toBe(true);
      expect(await old.ack('stale again')).toBe(false);
      expect((await q.getJob(id))!.result).toBe('fresh');
    });

    it('follows retention: sweepExpired deletes records past resultRetentionMs, keeps them by default', async () => {
      const name = uid('r-retain');
      const q = store().queue(name, { resultRetentionMs: 0 });
      const id = await q.enqueue(1);
      await (await claimSoon(q)).ack('x');
      expect((await q.getJob(id))!.state).toBe('completed');
      expect((await q.sweepExpired()).purged).toBe(1);
      expect(await q.getJob(id)).toBeNull();
      const kept = store().queue(uid('r-keep'));
      const k = await kept.enqueue(1);
      await (await claimSoon(kept)).ack('y');
      expect((await kept.sweepExpired()).purged).toBe(0);
      expect((await kept.getJob(k))!.result).toBe('y');
    });
  });

  describe('waitForResult and enqueueAndWait', () => {
    it('waitForResult in another store resolves with the result once the ack commits', async () => {
      const q = store().queue(uid('w'));
      const id = await q.enqueue(1);
      const waiting = env.other.queue(q.name).waitForResult(id, { timeoutMs: 20_000 });
      await (await claimSoon(q)).ack({ done: true });
      await expect(waiting).resolves.toEqual({ done: true });
    });

    it("enqueueAndWait resolves with the return value of a worker's handler in another store", async () => {
      const name = uid('w-worker');
      const w = startWorker(env.other, name, async (job) => ({ doubled: (job.payload as number) * 2 }));
      try {
        await expect(store().queue(name).enqueueAndWait(21, { timeoutMs: 20_000 })).resolves.toEqual({ doubled: 42 });
      } finally {
        await w.stop();
      }
    });

    it('enqueueAndWait of a handler that returns nothing resolves undefined; the job is recorded completed (wait header)', async () => {
      const name = uid('w-void');
      let seen: number | null = null;
      const w = startWorker(env.other, name, async (job) => {
        seen = job.id;
        expect(job.headers[WAIT_HEADER]).toBe('1');
      });
      try {
        await expect(
          store()
            .queue(name)
            .enqueueAndWait('x', { timeoutMs: 20_000, headers: { mine: 'y' } }),
        ).resolves.toBeUndefined();
        const info = (await store().queue(name).getJob(seen!))!;
        expect(info.state).toBe('completed');
        expect(info.headers).toEqual({ mine: 'y', [WAIT_HEADER]: '1' });
        expect('result' in info).toBe(false);
      } finally {
        await w.stop();
      }
    });

    it('rejects with JobDead carrying the final error when the job dies', async () => {
      const q = store().queue(uid('w-dead'));
      // settled() takes the rejection at once: it may land before the test awaits it.
      const waiting = settled(env.other.queue(q.name).enqueueAndWait(1, { maxAttempts: 1, timeoutMs: 20_000 }));
      const job = await claimSoon(q);
      await job.fail(new Error('boom: no such customer'));
      const err = await expectError(waiting, JobDead);
      expect(err.lastError).toContain('boom: no such customer');
      expect(err.jobId).toBe(job.id);
    });

    it('rejects with JobDead when retries run out', async () => {
      const q = store().queue(uid('w-exhausted'));
      const id = await q.enqueue(1, { maxAttempts: 1 });
      const waiting = settled(env.other.queue(q.name).waitForResult(id, { timeoutMs: 20_000 }));
      await (await claimSoon(q)).retry(new Error('transient'));
      expect((await expectError(waiting, JobDead)).lastError).toContain('transient');
    });

    it('rejects with JobCancelled when the job is cancelled', async () => {
      const q = store().queue(uid('w-cancel'));
      const id = await q.enqueue(1, { delayMs: 60_000 });
      const waiting = settled(env.other.queue(q.name).waitForResult(id, { timeoutMs: 20_000 }));
      expect(await q.cancel(id)).toBe(true);
      expect((await expectError(waiting, JobCancelled)).jobId).toBe(id);
    });

    it('rejects with ResultTimeout after timeoutMs and leaves the job as it is', async () => {
      const q = store().queue(uid('w-timeout'));
      const id = await q.enqueue(1, { delayMs: 60_000 });
      const err = await expectError(() => q.waitForResult(id, { timeoutMs: 30 }), ResultTimeout);
      expect(err.message).toContain(`job ${id}`);
      expect((await q.getJob(id))!.state).toBe('pending');
    });

    it('refuses bad input before any I/O, naming it', async () => {
      const q = store().queue(uid('w-bad'));
      expect((await expectError(() => q.waitForResult(-1), InvalidArgument)).message).toContain('id');
      expect((await expectError(() => q.waitForResult(1, { timeoutMs: 0 }), InvalidArgument)).message).toContain(
        'timeoutMs',
      );
      expect(
        (await expectError(() => q.enqueueAndWait(1, { timeoutMs: Number.NaN }), InvalidArgument)).message,
      ).toContain('timeoutMs');
      expect((await q.stats()).pending).toBe(0);
    });
  });
}
