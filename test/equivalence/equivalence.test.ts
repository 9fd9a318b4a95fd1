import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { backoffRangeMs } from '../../lib/contract/backoff.js';
import type { JobInfo, Store, StreamEvent } from '../../lib/contract/types.js';
import { type EngineDb, type EngineFixture, PG_AVAILABLE, postgres, sqliteFile, waitFor } from '../helpers/engines.js';
import { openTx } from '../helpers/open-tx.js';

/**
 * Cross-engine equivalence (SPEC §5, §6): the same calls on SQLite and
 * PostgreSQL give the same observable results. Each scenario runs on both
 * engines and the outcomes are compared field by field; fields that depend on
 * the clock are compared by shape or by their distance to the database's now.
 */
const describeBoth = PG_AVAILABLE ? describe : describe.skip;

interface Opened {
  engine: EngineFixture;
  db: EngineDb;
  store: Store;
}

describeBoth('cross-engine equivalence (sqlite and postgres)', () => {
  const engines: Opened[] = [];
  beforeAll(async () => {
    for (const engine of [sqliteFile, postgres]) {
      const db = await engine.create();
      engines.push({ engine, db, store: await db.open() });
    }
  }, 60_000);
  afterAll(async () => {
    for (const e of engines) await e.db.destroy();
  }, 60_000);

  /** Runs `scenario` on each engine, in order, and returns the results keyed by engine kind. */
  async function onBoth<T>(scenario: (store: Store) => Promise<T>): Promise<{ sqlite: T; postgres: T }> {
    const out: Partial<Record<'sqlite' | 'postgres', T>> = {};
    for (const e of engines) out[e.engine.kind] = await scenario(e.store);
    return out as { sqlite: T; postgres: T };
  }

  describe('streams', () => {
    const sequence: Array<{ key: string | null; payload: unknown; tx?: 'commit' | 'rollback' }> = [
      { key: null, payload: { n: 1 } },
      { key: 'a', payload: { n: 2 } },
      { key: null, payload: 'three', tx: 'commit' },
      { key: 'b', payload: ['four'], tx: 'rollback' },
      { key: 'a', payload: null, tx: 'commit' },
      { key: '名前 with spaces', payload: { nested: { n: 6, list: [1, 2.5, true, null] } } },
      { key: null, payload: 7 },
    ];

    async function publishSequence(store: Store, stream: string): Promise<number[]> {
      const s = store.stream(stream);
      const offsets: number[] = [];
      for (const step of sequence) {
        if (step.tx) {
          const tx = await openTx(store);
          const o =
            step.key === null
              ? await tx.publish(stream, step.payload)
              : await tx.publishWithKey(stream, step.key, step.payload);
          if (step.tx === 'commit') {
            await tx.commit();
            offsets.push(o);
          } else await tx.rollback();
        } else {
          offsets.push(
            step.key === null ? await s.publish(step.payload) : await s.publishWithKey(step.key, step.payload),
          );
        }
      }
      return offsets;
    }

    const strip = (events: StreamEvent[]) =>
      events.map(({ offset, stream, key, payload }) => ({ offset, stream, key, payload }));

    it('the same committed publish sequence gives the same offsets and the same read order', async () => {
      const r = await onBoth(async (store) => {
        const before = await store.now();
        const offsets = await publishSequence(store, 'equiv-stream');
        const events = await store.stream('equiv-stream').readSince(0);
        const after = await store.now();
        return { offsets, events, before, after };
      });
      expect(r.postgres.offsets).toEqual(r.sqlite.offsets);
      expect(r.sqlite.offsets).toEqual([...r.sqlite.offsets].sort((a, b) => a - b));
      expect(strip(r.postgres.events)).toEqual(strip(r.sqlite.events));
      // Key round-trips exactly: null stays null, strings stay strings.
      expect(r.postgres.events.map((e) => e.key)).toEqual([null, 'a', null, 'a', '名前 with spaces', null]);
      for (const engine of ['sqlite', 'postgres'] as const) {
        const { events, before, after } = r[engine];
        expect(events.map((e) => Object.keys(e).sort())).toEqual(
          events.map(() => ['createdAt', 'key', 'offset', 'payload', 'stream']),
        );
        for (const e of events) {
          expect(e.stream).toBe('equiv-stream');
          expect(typeof e.createdAt).toBe('number');
          expect(Number.isInteger(e.createdAt)).toBe(true);
          expect(e.createdAt).toBeGreaterThanOrEqual(before);
          expect(e.createdAt).toBeLessThanOrEqual(after);
        }
      }
    });

    it('subscribers read the same events in the same order, resuming from the same saved offset', async () => {
      const r = await onBoth(async (store) => {
        await publishSequence(store, 'equiv-sub');
        const stream = store.stream('equiv-sub');
        const sub = stream.subscribe('c');
        const first: StreamEvent[] = [];
        for (let i = 0; i < 3; i++) first.push((await sub.next(AbortSignal.timeout(10_000)))!);
        await sub.saveOffset(first[2]!.offset);
        sub.close();
        const resumed = stream.subscribe('c');
        const rest: StreamEvent[] = [];
        for (let i = 0; i < 3; i++) rest.push((await resumed.next(AbortSignal.timeout(10_000)))!);
        resumed.close();
        const lowerSave = await stream.saveOffset('c', 1);
        return { first: strip(first), rest: strip(rest), saved: await stream.getOffset('c'), lowerSave };
      });
      expect(r.postgres).toEqual(r.sqlite);
      expect(r.sqlite.lowerSave).toBe(false);
    });

    it('trimming keeps surviving offsets and the next publish continues the sequence', async () => {
      const r = await onBoth(async (store) => {
        await publishSequence(store, 'equiv-trim');
        const s = store.stream('equiv-trim');
        const trimmed = await s.trimTo(3);
        const next = await s.publish('after-trim');
        return { trimmed, next, offsets: (await s.readSince(0)).map((e) => e.offset) };
      });
      expect(r.postgres).toEqual(r.sqlite);
    });
  });

  describe('queues', () => {
    it('retry without a delay lands runAt - now within backoffRangeMs of the attempt, on both engines', async () => {
      const base = 40_000;
      const r = await onBoth(async (store) => {
        const samples: Array<{
          attempts: number;
          delay: number;
          window: number;
          state: string;
          lastError: string | null;
        }> = [];
        for (const attempts of [1, 2, 3]) {
          const q = store.queue(`equiv-backoff-${attempts}`, { backoffBaseMs: base, maxAttempts: 10 });
          const id = await q.enqueue({ attempts });
          // Earlier attempts are consumed by claims whose short lease lapses (a reclaim consumes an attempt).
          for (let i = 1; i < attempts; i++) {
            if (i === 1) expect(await q.claimOne('w', { leaseMs: 30 })).not.toBeNull();
            else await waitFor('the short lease to lapse', () => q.claimOne('w', { leaseMs: 30 }));
          }
          const job =
            attempts === 1 ? (await q.claimOne('w'))! : await waitFor('the last lease to lapse', () => q.claimOne('w'));
          expect(job.attempts).toBe(attempts);
          const before = await store.now();
          expect(await job.retry(new Error(`boom ${attempts}`))).toBe(true);
          const after = await store.now();
          const info = (await q.getJob(id))!;
          samples.push({
            attempts,
            delay: info.runAt - before,
            window: after - before,
            state: info.state,
            lastError: info.lastError,
          });
        }
        return samples;
      });
      for (const engine of ['sqlite', 'postgres'] as const) {
        expect(r[engine].map((s) => [s.attempts, s.state, s.lastError])).toEqual([
          [1, 'pending', 'boom 1'],
          [2, 'pending', 'boom 2'],
          [3, 'pending', 'boom 3'],
        ]);
        for (const s of r[engine]) {
          const { min, max } = backoffRangeMs(s.attempts, base);
          expect(s.delay).toBeGreaterThanOrEqual(min);
          expect(s.delay).toBeLessThanOrEqual(max + s.window);
        }
      }
    });

    it('the same stamped options are visible through getJob on both engines', async () => {
      const normalize = (j: JobInfo | null, now: number) =>
        j && {
          ...j,
          id: typeof j.id,
          runAt: j.runAt - now > 50_000 ? 'delayed-60s' : 'now',
          enqueuedAt: typeof j.enqueuedAt,
          expiresAt: j.expiresAt === null ? null : j.expiresAt - j.enqueuedAt,
          claimedUntil: j.claimedUntil === null ? null : 'set',
          diedAt: j.diedAt === null ? null : 'set',
        };
      const r = await onBoth(async (store) => {
        const now = await store.now();
        const q = store.queue('equiv-stamp', {
          leaseMs: 12_345,
          maxAttempts: 7,
          backoffBaseMs: 250,
          deadLetterRetentionMs: 86_400_000,
        });
        const plain = await q.enqueue({ a: 1 });
        const tuned = await q.enqueue(
          { b: [1, 'two'] },
          { priority: 9, maxAttempts: 2, delayMs: 60_000, expiresInMs: 120_000, leaseMs: 999 },
        );
        const defaults = await store.queue('equiv-stamp-defaults').enqueue('d');
        const viaTx = await store.withTx((tx) => tx.enqueue('equiv-stamp', { tx: true }, { priority: -1 }));
        const outbox = await store.outboxEnqueue('equiv-outbox', { mail: 1 });
        return {
          plain: normalize(await q.getJob(plain), now),
          tuned: normalize(await q.getJob(tuned), now),
          defaults: normalize(await store.queue('equiv-stamp-defaults').getJob(defaults), now),
          viaTx: normalize(await q.getJob(viaTx), now),
          outbox: normalize(await store.outbox('equiv-outbox').queue.getJob(outbox), now),
        };
      });
      expect(r.postgres).toEqual(r.sqlite);
      expect(r.postgres.tuned).toMatchObject({
        priority: 9,
        maxAttempts: 2,
        visibilityTimeoutMs: 999,
        backoffBaseMs: 250,
        expiresAt: 120_000,
        runAt: 'delayed-60s',
      });
      expect(r.postgres.defaults).toMatchObject({
        maxAttempts: 3,
        visibilityTimeoutMs: 300_000,
        backoffBaseMs: 5_000,
        deadLetterRetentionMs: null,
      });
      expect(r.postgres.outbox).toMatchObject({ maxAttempts: 5, visibilityTimeoutMs: 60_000 });
    });

    it('claim order, dead-lettering and stats agree', async () => {
      const r = await onBoth(async (store) => {
        const q = store.queue('equiv-order', { maxAttempts: 1 });
        await q.enqueueMany(['p0-a', 'p0-b']);
        await q.enqueue('p5', { priority: 5 });
        await q.enqueue('p-1', { priority: -1 });
        const order = (await q.claimBatch(10, 'w', { leaseMs: 30 })).map((j) => j.payload);
        // The leases lapse; the next claim finds every row exhausted and buries it instead of handing it out.
        const dead = await waitFor('the exhausted rows to go dead', async () => {
          expect(await q.claimOne('w')).toBeNull();
          const d = await q.listDead();
          return d.length === 4 ? d : null;
        });
        const stats = await q.stats();
        return {
          order,
          dead: dead.map((j) => ({
            payload: j.payload,
            attempts: j.attempts,
            lastError: j.lastError,
            state: j.state,
            claimedUntil: j.claimedUntil,
            died: typeof j.diedAt,
          })),
          stats: { ...stats, oldestPendingAgeMs: 0 },
        };
      });
      expect(r.postgres).toEqual(r.sqlite);
      expect(r.postgres.order).toEqual(['p5', 'p0-a', 'p0-b', 'p-1']);
    });
  });
});
