import { describe, expect, it } from '@jest/globals';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { uid, useEnv } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** A deterministic shuffle (mulberry32), so a failing order can be replayed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let a = seed >>> 0;
  const random = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Claims and acks (in batches, so one ack finishes jobs of several keys) until `stop()` says so
 * and nothing is left. A failed claim or ack is recorded in `errors` (a deadlock victim) and the
 * loop goes on: a job whose ack failed is claimed again when its lease lapses.
 */
async function drain(
  queue: Queue,
  stop: () => boolean,
  seen: (jobs: readonly Job[]) => void,
  errors: unknown[],
): Promise<void> {
  let stoppedAt: number | undefined;
  for (;;) {
    let jobs: Job[] = [];
    try {
      jobs = await queue.claimBatch(16, 'drainer', { leaseMs: 2_000 });
      if (jobs.length > 0) {
        seen(jobs);
        await queue.ackBatch(jobs);
        continue;
      }
    } catch (err) {
      errors.push(err);
    }
    if (stop()) {
      const st = await queue.stats();
      if (st.pending + st.processing === 0) return;
      stoppedAt ??= Date.now();
      // Bounded: a key left without a head (or a lost ack) must fail the test, not hang it.
      if (Date.now() - stoppedAt > 20_000)
        throw new Error(`${st.pending} pending and ${st.processing} processing jobs never drained`);
    }
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Which keys a batch holds more than once (an ordering key must never be claimed twice at once). */
function twice(jobs: readonly Job[], key: (j: Job) => string | null): string[] {
  const seen = new Set<string>();
  const dup: string[] = [];
  for (const j of jobs) {
    const k = key(j);
    if (k === null) continue;
    if (seen.has(k)) dup.push(k);
    seen.add(k);
  }
  return dup;
}

/**
 * Key locks (SPEC §11): callers that take the same ordering or unique keys in
 * different orders, in bulks and in transactions, while workers finish jobs of
 * several keys in one ackBatch, never deadlock (PostgreSQL 40P01). SQLite has
 * one writer and cannot deadlock; the contract holds on both engines.
 */
export function keyLocksContract(engine: EngineFixture): void {
  const env = useEnv(engine);

  /** Four stores on one database (four pools on PostgreSQL: separate connections, as separate processes). */
  async function fourStores(): Promise<Store[]> {
    return [env.store, env.other, await env.db.open(), await env.db.open()];
  }

  const KEYS = Array.from({ length: 8 }, (_, i) => `k${i}`);

  describe('keyed bulks in shuffled key orders', () => {
    it('eight callers enqueue ordering-key bulks in shuffled orders while workers ack across keys: none is rejected, each key runs one job at a time', async () => {
      const name = uid('kl-order');
      const stores = await fourStores();
      const errors: unknown[] = [];
      let producing = true;
      const doubles: string[] = [];
      const drainers = stores.slice(0, 2).map((s) =>
        drain(
          s.queue(name),
          () => !producing,
          (jobs) => doubles.push(...twice(jobs, (j) => j.orderingKey)),
          errors,
        ),
      );
      const producers = stores.flatMap((s, si) =>
        [0, 1].map(async (pi) => {
          const q = s.queue(name);
          for (let round = 0; round < 8; round++) {
            const keys = shuffled(KEYS, si * 1000 + pi * 100 + round);
            await q
              .enqueueBulk(keys.map((k) => ({ payload: { k, round }, opts: { orderingKey: k } })))
              .catch((err: unknown) => void errors.push(err));
          }
        }),
      );
      await Promise.all(producers);
      producing = false;
      await Promise.all(drainers);
      expect(errors.map(String)).toEqual([]);
      expect(doubles).toEqual([]);
      expect(await env.store.queue(name).stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('eight callers enqueue unique-key bulks in shuffled orders while workers free the keys: none is rejected', async () => {
      const name = uid('kl-unique');
      const stores = await fourStores();
      const errors: unknown[] = [];
      let producing = true;
      let handled = 0;
      const drainers = stores.slice(0, 2).map((s) =>
        drain(
          s.queue(name),
          () => !producing,
          (jobs) => void (handled += jobs.length),
          errors,
        ),
      );
      const producers = stores.flatMap((s, si) =>
        [0, 1].map(async (pi) => {
          const q = s.queue(name);
          for (let round = 0; round < 8; round++) {
            const keys = shuffled(KEYS, si * 1000 + pi * 100 + round + 7);
            const ids = await q
              .enqueueBulk(keys.map((k) => ({ payload: { k }, opts: { uniqueKey: k } })))
              .catch((err: unknown) => {
                errors.push(err);
                return [];
              });
            if (ids.length > 0) expect(ids).toHaveLength(KEYS.length);
          }
        }),
      );
      await Promise.all(producers);
      producing = false;
      await Promise.all(drainers);
      expect(errors.map(String)).toEqual([]);
      expect(handled).toBeGreaterThanOrEqual(KEYS.length);
    });
  });

  describe('transactions with several keyed outbox messages', () => {
    it('transfers A→B and B→A in concurrent transactions, each enqueueing its two messages in ascending key order (docs: key order), never deadlock', async () => {
      const box = uid('kl-transfer');
      const stores = await fourStores();
      const errors: unknown[] = [];
      let producing = true;
      const doubles: string[] = [];
      const drainers = stores.slice(0, 2).map((s) =>
        drain(
          s.outbox(box).queue,
          () => !producing,
          (jobs) => doubles.push(...twice(jobs, (j) => j.orderingKey)),
          errors,
        ),
      );
      const accounts = ['acct-A', 'acct-B', 'acct-C'];
      const transfers = stores.flatMap((s, si) =>
        [0, 1].map(async (pi) => {
          for (let round = 0; round < 15; round++) {
            const [from, to] = shuffled(accounts, si * 1000 + pi * 100 + round + 13);
            try {
              const tx = await openTx(s);
              try {
                // The documented rule for a caller's own transaction: keyed enqueues in ascending (queue, key) order.
                for (const key of [from!, to!].sort())
                  await tx.outboxEnqueue(
                    box,
                    { from, to, side: key === from ? 'debit' : 'credit' },
                    { orderingKey: key },
                  );
                await tx.commit();
              } catch (err) {
                if (!tx.finished) await tx.rollback();
                throw err;
              }
            } catch (err) {
              errors.push(err);
            }
          }
        }),
      );
      await Promise.all(transfers);
      producing = false;
      await Promise.all(drainers);
      expect(errors.map(String)).toEqual([]);
      expect(doubles).toEqual([]);
    });
  });
}
