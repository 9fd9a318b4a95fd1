import { describe, expect, it } from '@jest/globals';
import { backoffRangeMs } from '../../lib/contract/backoff.js';
import { Codec, InvalidName, PermanentError, ReservedName } from '../../lib/contract/errors.js';
import type { Job, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** Outbox (SPEC §8 first bullet, seed 002 outbox + verification backlog "outbox_enqueue_tx"). */
export function outboxContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('outbox', () => {
    it('outboxEnqueue lands in __alkstore_outbox:<name> with the outbox defaults', async () => {
      const name = uid('ob');
      const ob = store().outbox(name);
      expect(ob.name).toBe(name);
      expect(ob.queue.name).toBe(`__alkstore_outbox:${name}`);
      expect(ob.queue.opts).toEqual({
        leaseMs: 60_000,
        maxAttempts: 5,
        backoffBaseMs: 5_000,
        deadLetterRetentionMs: null,
        resultRetentionMs: 604_800_000,
        limitKeys: null,
      });
      const id = await store().outboxEnqueue(name, { order: 1 });
      expect(await ob.queue.getJob(id)).toMatchObject({
        queue: `__alkstore_outbox:${name}`,
        state: 'pending',
        payload: { order: 1 },
        visibilityTimeoutMs: 60_000,
        maxAttempts: 5,
        backoffBaseMs: 5_000,
        deadLetterRetentionMs: null,
        attempts: 0,
      });
      const viaHandle = await ob.enqueue({ order: 2 }, { priority: 3, maxAttempts: 2 });
      expect(await env.other.outbox(name).queue.getJob(viaHandle)).toMatchObject({
        payload: { order: 2 },
        priority: 3,
        maxAttempts: 2,
        visibilityTimeoutMs: 60_000,
      });
    });

    it('runOnce resolves false and does not call delivery when there is no work', async () => {
      const ob = store().outbox(uid('ob-empty'));
      let calls = 0;
      expect(
        await ob.runOnce('w', async () => {
          calls += 1;
        }),
      ).toBe(false);
      expect(calls).toBe(0);
    });

    it('runOnce acks the job when delivery succeeds', async () => {
      const name = uid('ob-ok');
      const ob = store().outbox(name);
      const id = await store().outboxEnqueue(name, 'deliver me');
      const seen: Job[] = [];
      expect(
        await env.other.outbox(name).runOnce('worker-1', async (job) => {
          seen.push(job);
        }),
      ).toBe(true);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ id, payload: 'deliver me', attempts: 1, queue: `__alkstore_outbox:${name}` });
      expect(await ob.queue.getJob(id)).toBeNull();
      expect(await ob.runOnce('w', async () => undefined)).toBe(false);
    });

    it('runOnce retries with the backoff when delivery throws, keeping the error', async () => {
      const name = uid('ob-fail');
      const ob = store().outbox(name);
      const id = await ob.enqueue('flaky');
      const t0 = await store().now();
      expect(
        await ob.runOnce('w', async () => {
          throw new Error('broker down');
        }),
      ).toBe(true);
      const t1 = await store().now();
      const info = (await ob.queue.getJob(id))!;
      expect(info).toMatchObject({ state: 'pending', attempts: 1 });
      expect(info.lastError).toContain('broker down');
      const { min, max } = backoffRangeMs(1, 5_000);
      expect(info.runAt - t0).toBeGreaterThanOrEqual(min);
      expect(info.runAt - t1).toBeLessThanOrEqual(max);
      // Not redelivered before its backoff.
      expect(await ob.runOnce('w', async () => undefined)).toBe(false);
    });

    it('runOnce dead-letters the message when its last attempt throws', async () => {
      const name = uid('ob-dead');
      const ob = store().outbox(name, { maxAttempts: 1 });
      const id = await ob.enqueue('doomed');
      expect((await ob.queue.getJob(id))!.maxAttempts).toBe(1);
      expect(
        await ob.runOnce('w', async () => {
          throw new Error('permanently broken');
        }),
      ).toBe(true);
      const info = (await ob.queue.getJob(id))!;
      expect(info).toMatchObject({ state: 'dead', attempts: 1 });
      expect(info.lastError).toContain('permanently broken');
      expect((await ob.queue.listDead()).map((d) => d.id)).toEqual([id]);
    });

    it('runOnce dead-letters a PermanentError at once, as the dispatcher does', async () => {
      const name = uid('ob-perm');
      const ob = store().outbox(name);
      const id = await ob.enqueue('malformed');
      expect(
        await ob.runOnce('w', async () => {
          throw new PermanentError('the broker refused the schema');
        }),
      ).toBe(true);
      const info = (await ob.queue.getJob(id))!;
      expect(info).toMatchObject({ state: 'dead', attempts: 1, maxAttempts: 5 });
      expect(info.lastError).toBe('permanent: the broker refused the schema');
      expect((await ob.queue.listDead()).map((d) => d.id)).toEqual([id]);
    });

    it('a transactional outboxEnqueue is dropped on rollback and claimable after commit', async () => {
      const name = uid('ob-tx');
      const ob = store().outbox(name);
      const rolled = await openTx(store());
      const ghost = await rolled.outboxEnqueue(name, 'ghost');
      await rolled.rollback();
      expect(await ob.queue.getJob(ghost)).toBeNull();
      expect(await ob.runOnce('w', async () => undefined)).toBe(false);

      const tx = await openTx(store());
      const id = await tx.outboxEnqueue(name, 'real', { priority: 1 });
      // Not visible to another store before commit.
      expect(await env.other.outbox(name).queue.getJob(id)).toBeNull();
      await tx.commit();
      expect(await env.other.outbox(name).queue.getJob(id)).toMatchObject({
        state: 'pending',
        visibilityTimeoutMs: 60_000,
        maxAttempts: 5,
        priority: 1,
      });
      const delivered: unknown[] = [];
      expect(
        await env.other.outbox(name).runOnce('w', async (job) => {
          delivered.push(job.payload);
        }),
      ).toBe(true);
      expect(delivered).toEqual(['real']);
    });

    it('withTx(fn) outboxEnqueue commits with the business write', async () => {
      const name = uid('ob-withtx');
      const id = await store().withTx((tx) => tx.outboxEnqueue(name, 'w'));
      expect((await store().outbox(name).queue.getJob(id))!.state).toBe('pending');
    });

    it('the backing queue is unreachable through plain queue names', async () => {
      const name = uid('ob-reserved');
      await expectError(() => store().queue(`__alkstore_outbox:${name}`), ReservedName);
      const tx = await openTx(store());
      try {
        await expectError(() => tx.enqueue(`__alkstore_outbox:${name}`, 1), ReservedName);
      } finally {
        await tx.rollback();
      }
    });

    it('rejects reserved and empty outbox names and bad payloads on every path', async () => {
      await expectError(() => store().outbox('__alkstore_x'), ReservedName);
      await expectError(() => store().outbox(''), InvalidName);
      await expectError(() => store().outboxEnqueue('__alkstore_x', 1), ReservedName);
      await expectError(() => store().outboxEnqueue(' ', 1), InvalidName);
      const name = uid('ob-codec');
      await expectError(() => store().outboxEnqueue(name, 1n), Codec);
      const tx = await openTx(store());
      await expectError(() => tx.outboxEnqueue('__alkstore_x', 1), ReservedName);
      await expectError(() => tx.outboxEnqueue('', 1), InvalidName);
      await expectError(() => tx.outboxEnqueue(name, 1n), Codec);
      await tx.commit();
      expect(await store().outbox(name).queue.stats()).toMatchObject({ pending: 0 });
    });
  });
}
