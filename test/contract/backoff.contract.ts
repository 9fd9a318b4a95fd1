import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectInvalidArgument, refusal } from '../helpers/typed-errors.js';
import { type BackoffVectors, loadVectors } from '../unit/vectors.js';
import { uid, useEnv } from './harness.js';

const backoff = loadVectors<BackoffVectors>('backoff.json');

/** The vectors replayed through real retries: three attempts, both bases, the ends and the middle of the random range. */
const picked = backoff.delays.filter((d) => d.attempts <= 3 && [0, 0.5, 0.9999999].includes(d.random));

/**
 * Backlog item B6 (seed 002, "backoff-curve equivalence across engines"): with
 * the same injected random, a retry without a delay parks the job for exactly
 * the delay of conformance/contract/backoff.json on every engine, and each such
 * retry draws exactly one random number (a retry with a delay draws none).
 */
export function backoffContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  let store: Store | undefined;
  let next = 0;
  let draws = 0;
  beforeAll(async () => {
    store = await env.db.open({
      random: () => {
        draws += 1;
        return next;
      },
    });
  }, 60_000);
  afterAll(async () => {
    await store?.close();
  });
  const s = (): Store => store!;

  describe('retry backoff with an injected random (B6)', () => {
    it.each(picked.map((d) => [d.attempts, d.baseMs, d.random, d.delayMs] as const))(
      'attempt %i, base %i ms, random %d: the job is parked for exactly %i ms',
      async (attempts, baseMs, random, delayMs) => {
        const q = s().queue(uid('b6'), { backoffBaseMs: baseMs, maxAttempts: 10 });
        const id = await q.enqueue({ attempts });
        // Earlier attempts retry with an explicit 0 delay: claimable again at once, no random drawn.
        for (let a = 1; a < attempts; a++) {
          const j = (await q.claimOne('w'))!;
          expect(await j.retry('again', 0)).toBe(true);
        }
        const job = (await q.claimOne('w'))!;
        expect(job.attempts).toBe(attempts);
        next = random;
        const drawsBefore = draws;
        const t0 = await s().now();
        expect(await job.retry(new Error('boom'))).toBe(true);
        const t1 = await s().now();
        expect(draws - drawsBefore).toBe(1);
        const info = (await q.getJob(id))!;
        expect(info.state).toBe('pending');
        // runAt = (database now at the retry) + delay, and that now lies in [t0, t1].
        expect(info.runAt).toBeGreaterThanOrEqual(t0 + delayMs);
        expect(info.runAt).toBeLessThanOrEqual(t1 + delayMs);
      },
    );

    it('draws one random number per retry without a delay, even a refused one, and none for a retry with a delay', async () => {
      const q = s().queue(uid('b6-draws'), { backoffBaseMs: 60_000 });
      await q.enqueue(1);
      const job = (await q.claimOne('w'))!;
      next = 0.25;
      const start = draws;
      expect(await job.retry('explicit', 0)).toBe(true);
      expect(draws - start).toBe(0);
      // The handle is stale now (the row is pending): the retry is refused, yet it drew, on both engines alike.
      expect(await job.retry('stale')).toBe(false);
      expect(draws - start).toBe(1);
    });

    it.each([1, -0.5, Number.NaN])(
      'a random source returning %p is refused with an InvalidArgument naming random, and the job is left as it was',
      async (bad) => {
        const q = s().queue(uid('b6-bad'), { backoffBaseMs: 1_000, maxAttempts: 5 });
        const id = await q.enqueue(1);
        const job = (await q.claimOne('w'))!;
        const before = (await q.getJob(id))!;
        next = bad;
        try {
          expectInvalidArgument(await refusal(() => job.retry(new Error('boom'))), 'random', ['[0, 1)']);
        } finally {
          next = 0.5;
        }
        // Nothing was written: still processing under this claim, same attempts, no error recorded.
        const after = (await q.getJob(id))!;
        expect(after).toEqual(before);
        expect(after.state).toBe('processing');
        // The claim is intact: the job can still be retried or acked by its holder.
        expect(await job.ack()).toBe(true);
      },
    );

    it('a bad random draw is refused the same way on the last attempt too (checked before the write, not after the attempts test)', async () => {
      const q = s().queue(uid('b6-bad-last'), { backoffBaseMs: 1_000, maxAttempts: 1 });
      const id = await q.enqueue(1);
      const job = (await q.claimOne('w'))!;
      const before = (await q.getJob(id))!;
      next = 1;
      try {
        expectInvalidArgument(await refusal(() => job.retry(new Error('boom'))), 'random', ['[0, 1)']);
      } finally {
        next = 0.5;
      }
      expect(await q.getJob(id)).toEqual(before);
      expect(await job.ack()).toBe(true);
    });
  });
}
