import { describe, expect, it } from '@jest/globals';
import type { EngineFixture } from '../helpers/engines.js';
import { uid, useEnv } from './harness.js';

/** SPEC §11: a claim returns the lease it granted, as a duration (`Job.leaseMs`), never only as a database instant. */
export function leaseContract(engine: EngineFixture): void {
  const env = useEnv(engine);

  describe('the lease a claim grants', () => {
    it("claimBatch without an override grants the job's stamped visibility timeout; with one, the override", async () => {
      const q = env.store.queue(uid('lease'), { leaseMs: 45_000 });
      await q.enqueueMany([1, 2]);
      await q.enqueue(3, { priority: -1 });
      const [stamped] = await q.claimBatch(1, 'w');
      const [overridden] = await q.claimBatch(1, 'w', { leaseMs: 7_000 });
      const one = await q.claimOne('w', { leaseMs: 9_000 });
      expect(stamped!.leaseMs).toBe(45_000);
      expect(overridden!.leaseMs).toBe(7_000);
      expect(one!.leaseMs).toBe(9_000);
      // The deadline is the database instant of the same lease.
      const info = await q.getJob(overridden!.id);
      expect(info!.claimedUntil).toBe(overridden!.deadline);
      expect(info!.visibilityTimeoutMs).toBe(45_000);
    });

    it('a per-job visibility timeout is the lease its claim grants', async () => {
      const q = env.store.queue(uid('lease-job'));
      await q.enqueue('x', { leaseMs: 12_345 });
      const job = await q.claimOne('w');
      expect(job!.leaseMs).toBe(12_345);
    });

    it('a reclaim after a lapsed lease grants a fresh lease', async () => {
      const q = env.store.queue(uid('lease-lapsed'), { leaseMs: 30_000 });
      await q.enqueue('x');
      const first = await q.claimOne('w', { leaseMs: 1 });
      expect(first!.leaseMs).toBe(1);
      let again = null;
      for (let i = 0; i < 1000 && again === null; i++) again = await q.claimOne('w2');
      expect(again!.id).toBe(first!.id);
      expect(again!.leaseMs).toBe(30_000);
      expect(again!.attempts).toBe(2);
    });
  });
}
