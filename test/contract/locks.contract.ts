import { describe, expect, it } from '@jest/globals';
import { InvalidName } from '../../lib/contract/errors.js';
import type { Lock, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, untilDbPasses, useEnv } from './harness.js';

/** Named TTL locks (SPEC §7, seed 002 locks + verification backlog). */
export function lockContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('locks', () => {
    it('tryLock returns a lock whose expiry is now + ttl on the database clock', async () => {
      const name = uid('lock');
      const t0 = await store().now();
      const lock = (await store().tryLock(name, 'owner-a', 10_000))!;
      const t1 = await store().now();
      expect(lock).not.toBeNull();
      expect(lock.name).toBe(name);
      expect(lock.owner).toBe('owner-a');
      expect(lock.expiresAt).toBeGreaterThanOrEqual(t0 + 10_000);
      expect(lock.expiresAt).toBeLessThanOrEqual(t1 + 10_000);
      expect(await lock.release()).toBe(true);
    });

    it('excludes other owners, on this store and on another store', async () => {
      const name = uid('lock-excl');
      const a = (await store().tryLock(name, 'a', 10_000))!;
      expect(a).not.toBeNull();
      expect(await store().tryLock(name, 'b', 10_000)).toBeNull();
      expect(await env.other.tryLock(name, 'c', 10_000)).toBeNull();
      // Other names are independent.
      const other = await env.other.tryLock(`${name}-2`, 'c', 10_000);
      expect(other).not.toBeNull();
      await other!.release();
      await a.release();
    });

    it('renew moves the expiry to now + ttl while held', async () => {
      const name = uid('lock-renew');
      const a = (await store().tryLock(name, 'a', 5_000))!;
      const t0 = await store().now();
      expect(await a.renew(20_000)).toBe(true);
      const t1 = await store().now();
      expect(a.expiresAt).toBeGreaterThanOrEqual(t0 + 20_000);
      expect(a.expiresAt).toBeLessThanOrEqual(t1 + 20_000);
      // The stored expiry is the renewed one (seen through a same-owner re-acquire, which does not extend).
      const same = (await env.other.tryLock(name, 'a', 1_000))!;
      expect(same.expiresAt).toBe(a.expiresAt);
      expect(await a.release()).toBe(true);
    });

    it('release frees the lock for another owner; renew and release after release return false', async () => {
      const name = uid('lock-release');
      const a = (await store().tryLock(name, 'a', 10_000))!;
      expect(await a.release()).toBe(true);
      const b = (await env.other.tryLock(name, 'b', 10_000))!;
      expect(b).not.toBeNull();
      expect(await a.release()).toBe(false);
      expect(await a.renew(10_000)).toBe(false);
      // b still holds it.
      expect(await store().tryLock(name, 'c', 10_000)).toBeNull();
      expect(await b.release()).toBe(true);
    });

    it('exclusion lapses at expiry: another owner re-acquires, and the old holder can neither renew nor release', async () => {
      const name = uid('lock-expiry');
      const a = (await store().tryLock(name, 'a', 200))!;
      await untilDbPasses(store(), a.expiresAt);
      const b = (await env.other.tryLock(name, 'b', 10_000))!;
      expect(b).not.toBeNull();
      expect(b.owner).toBe('b');
      expect(await a.renew(10_000)).toBe(false);
      expect(await a.release()).toBe(false);
      expect(await store().tryLock(name, 'a', 10_000)).toBeNull();
      expect(await b.release()).toBe(true);
    });

    it('a lapsed lock cannot be renewed by its holder even when nobody took it', async () => {
      const name = uid('lock-lapsed');
      const a = (await store().tryLock(name, 'a', 200))!;
      await untilDbPasses(store(), a.expiresAt);
      expect(await a.renew(10_000)).toBe(false);
      expect(await a.release()).toBe(false);
    });

    it('re-acquiring by the same owner returns the lock without extending the ttl', async () => {
      const name = uid('lock-same');
      const a = (await store().tryLock(name, 'a', 5_000))!;
      const again = (await store().tryLock(name, 'a', 60_000))!;
      expect(again).not.toBeNull();
      expect(again.owner).toBe('a');
      expect(again.expiresAt).toBe(a.expiresAt);
      // Either handle works: they are the same holder.
      expect(await again.renew(5_000)).toBe(true);
      expect(await a.release()).toBe(true);
    });

    it('the same owner re-acquires after expiry with a fresh expiry', async () => {
      const name = uid('lock-same-expired');
      const a = (await store().tryLock(name, 'a', 200))!;
      await untilDbPasses(store(), a.expiresAt);
      const again = (await store().tryLock(name, 'a', 10_000))!;
      expect(again).not.toBeNull();
      expect(again.expiresAt).toBeGreaterThan(a.expiresAt);
      expect(await again.release()).toBe(true);
    });

    it('concurrent tryLock from many callers on two stores yields exactly one winner and no errors', async () => {
      for (let round = 0; round < 5; round++) {
        const name = uid('lock-race');
        const attempts = Array.from({ length: 24 }, (_, i) =>
          (i % 2 === 0 ? store() : env.other).tryLock(name, `owner-${i}`, 10_000),
        );
        const settled = await Promise.allSettled(attempts);
        const rejected = settled.filter((s) => s.status === 'rejected');
        expect(rejected).toEqual([]);
        const winners = settled
          .map((s) => (s.status === 'fulfilled' ? s.value : null))
          .filter((l): l is Lock => l !== null);
        expect(winners).toHaveLength(1);
        expect(await winners[0]!.release()).toBe(true);
      }
    });

    it('refuses bad ttls with RangeError and an empty owner with InvalidName', async () => {
      const name = uid('lock-bad');
      await expectError(() => store().tryLock(name, 'a', 0), RangeError);
      await expectError(() => store().tryLock(name, 'a', -1), RangeError);
      await expectError(() => store().tryLock(name, 'a', Number.NaN), RangeError);
      await expectError(() => store().tryLock(name, '', 1_000), InvalidName);
      const a = (await store().tryLock(name, 'a', 10_000))!;
      await expectError(() => a.renew(0), RangeError);
      expect(await a.release()).toBe(true);
    });
  });
}
