import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store, StoreLogger } from '../../lib/contract/types.js';
import type { LockDriver } from '../../lib/engines/shared/lock.js';
import type { ScheduleDriver } from '../../lib/engines/shared/scheduler.js';
import type { StreamDriver } from '../../lib/engines/shared/stream.js';
import { runTx, type TxDriver, type TxHandle } from '../../lib/engines/shared/tx.js';
import { scheduleInput } from '../../lib/internal/schedule-input.js';
import { contractEngines, describePg, PG_URL, postgres, waitFor, type EngineDb } from '../helpers/engines.js';

/**
 * The driver suite: what lib/engines/shared/ writes once, run against each engine's real
 * drivers (River's `riverdrivertest` idea). The contract suite above it tests the same
 * behaviour through the public API; this one pins what each driver operation must answer.
 */
interface Drivers {
  lockDriver: LockDriver;
  streamDriver: StreamDriver;
  scheduleDriver: ScheduleDriver;
  txDriver: TxDriver;
}

function driversOf(store: Store): Drivers {
  return store as unknown as Drivers;
}

let n = 0;
function uid(prefix: string): string {
  n += 1;
  return `${prefix}-${process.pid}-${n}`;
}

/** A logger that keeps what it is told, to assert on warnings. */
function keepingLogger(): StoreLogger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, log: () => undefined, warn: (m) => void warnings.push(m), error: () => undefined };
}

for (const engine of contractEngines()) {
  describe(`store drivers [${engine.name}]`, () => {
    let db: EngineDb;
    let store: Store;
    let d: Drivers;
    beforeAll(async () => {
      db = await engine.create();
      store = await db.open();
      d = driversOf(store);
    }, 60_000);
    afterAll(async () => {
      await db.destroy();
    }, 60_000);

    describe('lock driver', () => {
      it('take: a free lock is taken; its owner gets the same expiry back unextended; another owner gets null', async () => {
        const name = uid('lock');
        const first = await d.lockDriver.take(name, 'a', 60_000);
        expect(first).not.toBeNull();
        expect(await d.lockDriver.take(name, 'a', 600_000)).toBe(first);
        expect(await d.lockDriver.take(name, 'b', 60_000)).toBeNull();
      });

      it('renew and release answer only to the owner holding it; a released lock is free for another', async () => {
        const name = uid('lock');
        const taken = (await d.lockDriver.take(name, 'a', 60_000))!;
        expect(await d.lockDriver.renew(name, 'b', 60_000)).toBeNull();
        expect(await d.lockDriver.release(name, 'b')).toBe(false);
        const renewed = await d.lockDriver.renew(name, 'a', 600_000);
        expect(renewed).toBeGreaterThan(taken);
        expect(await d.lockDriver.release(name, 'a')).toBe(true);
        expect(await d.lockDriver.release(name, 'a')).toBe(false);
        expect(await d.lockDriver.renew(name, 'a', 60_000)).toBeNull();
        expect(await d.lockDriver.take(name, 'b', 60_000)).not.toBeNull();
      });
    });

    describe('stream driver', () => {
      it('publish assigns offsets 1, 2, … in order; readSince reads after an offset, up to a limit', async () => {
        const s = uid('stream');
        expect(await d.streamDriver.publish(s, null, '{"a":1}')).toBe(1);
        expect(await d.streamDriver.publish(s, 'k', '"two"')).toBe(2);
        expect(await d.streamDriver.publish(s, null, '3')).toBe(3);
        const all = await d.streamDriver.readSince(s, 0, 10);
        expect(all.map((e) => [e.offset, e.stream, e.key, e.payload])).toEqual([
          [1, s, null, { a: 1 }],
          [2, s, 'k', 'two'],
          [3, s, null, 3],
        ]);
        expect((await d.streamDriver.readSince(s, 1, 1)).map((e) => e.offset)).toEqual([2]);
      });

      it('saveOffset is monotone (true only when it rises; 0 never saves); readFromConsumer starts after it', async () => {
        const s = uid('stream');
        for (let i = 0; i < 4; i++) await d.streamDriver.publish(s, null, String(i));
        expect(await d.streamDriver.getOffset(s, 'c')).toBe(0);
        expect(await d.streamDriver.saveOffset(s, 'c', 0)).toBe(false);
        expect(await d.streamDriver.saveOffset(s, 'c', 2)).toBe(true);
        expect(await d.streamDriver.saveOffset(s, 'c', 2)).toBe(false);
        expect(await d.streamDriver.saveOffset(s, 'c', 1)).toBe(false);
        expect(await d.streamDriver.getOffset(s, 'c')).toBe(2);
        expect((await d.streamDriver.readFromConsumer(s, 'c', 10)).map((e) => e.offset)).toEqual([3, 4]);
      });

      it('trimTo deletes up to the horizon and offsets keep rising after it', async () => {
        const s = uid('stream');
        for (let i = 0; i < 3; i++) await d.streamDriver.publish(s, null, String(i));
        expect(await d.streamDriver.trimTo(s, 3)).toBe(3);
        expect(await d.streamDriver.readSince(s, 0, 10)).toEqual([]);
        expect(await d.streamDriver.publish(s, null, '4')).toBe(4);
      });
    });

    describe('schedule driver', () => {
      const HOUR = 3_600_000;
      const input = async (name: string, queue: string, startAt: number, catchUp: 'all' | 'latest' | 'none' = 'all') =>
        scheduleInput(name, '@every 1h', queue, { from: name }, { startAt, catchUp });

      it('fireDue enqueues every elapsed boundary (catch-up all), each stamped with its boundary, and advances past now', async () => {
        const name = uid('sched');
        const queue = uid('sq');
        const now = await store.now();
        await d.scheduleDriver.upsert(await input(name, queue, now - 3 * HOUR + 60_000));
        const tick = await d.scheduleDriver.fireDue();
        expect(tick.now).toBeGreaterThanOrEqual(now);
        const stats = await store.queue(queue).stats();
        expect(stats.pending).toBe(3);
        const s = (await d.scheduleDriver.get(name))!;
        expect(s.nextFireAt).toBeGreaterThan(tick.now);
        expect(tick.nextFireAt).not.toBeNull();
        expect(tick.nextFireAt!).toBeLessThanOrEqual(s.nextFireAt);
        // A second tick finds nothing due.
        await d.scheduleDriver.fireDue();
        expect((await store.queue(queue).stats()).pending).toBe(3);
      });

      it('a paused schedule fires nothing; resume skips what elapsed while paused', async () => {
        const name = uid('sched');
        const queue = uid('sq');
        const now = await store.now();
        await d.scheduleDriver.upsert(await input(name, queue, now - 2 * HOUR));
        expect(await d.scheduleDriver.setPaused(name, true)).toBe(true);
        expect(await d.scheduleDriver.setPaused(name, false)).toBe(true);
        const resumed = (await d.scheduleDriver.get(name))!;
        expect(resumed.paused).toBe(false);
        expect(resumed.nextFireAt).toBeGreaterThan(now);
        await d.scheduleDriver.fireDue();
        expect((await store.queue(queue).stats()).pending).toBe(0);
        expect(await d.scheduleDriver.setPaused(uid('none'), false)).toBe(false);
      });

      it('trigger enqueues one job now and leaves the next fire; remove deletes the row once', async () => {
        const name = uid('sched');
        const queue = uid('sq');
        const now = await store.now();
        const before = await d.scheduleDriver.upsert(await input(name, queue, now + HOUR));
        const id = await d.scheduleDriver.trigger(name);
        expect(id).not.toBeNull();
        expect((await store.queue(queue).getJob(id!))!.payload).toEqual({ from: name });
        expect((await d.scheduleDriver.get(name))!.nextFireAt).toBe(before.nextFireAt);
        expect((await d.scheduleDriver.list()).schedules.map((s) => s.name)).toContain(name);
        expect(await d.scheduleDriver.remove(name)).toBe(true);
        expect(await d.scheduleDriver.remove(name)).toBe(false);
        expect(await d.scheduleDriver.trigger(name)).toBeNull();
      });
    });

    describe('tx driver and the one withTx(fn) runner', () => {
      it("a rollback that fails does not replace the callback's error: the same error is thrown and the failure is logged", async () => {
        const queue = uid('tq');
        const log = keepingLogger();
        // The engine's real handle: its rollback runs, then reports a failure (a connection lost mid-ROLLBACK).
        const failing: TxDriver = {
          ...d.txDriver,
          open: async () => {
            const tx = await d.txDriver.open();
            return Object.assign(Object.create(tx) as TxHandle, {
              rollback: async () => {
                await tx.rollback();
                throw new Error('connection lost during ROLLBACK');
              },
            });
          },
        };
        const mine = new Error('the callback failed');
        const thrown = await runTx(failing, { logger: log, engine: engine.kind }, async (tx) => {
          await tx.enqueue(queue, 1);
          throw mine;
        }).catch((err: unknown) => err);
        expect(thrown).toBe(mine);
        expect(log.warnings).toHaveLength(1);
        expect(log.warnings[0]).toContain('connection lost during ROLLBACK');
        expect((await store.queue(queue).stats()).pending).toBe(0);
      });
    });
  });
}

describePg('withTx(fn) when the connection dies under it [postgres only: a real terminated backend]', () => {
  it("rejects with the callback's own error; the failed rollback is logged, and nothing of the transaction is visible", async () => {
    const db = await postgres.create();
    const log = keepingLogger();
    const { openPostgresStore } = await import('../../lib/engines/postgres/index.js');
    const store = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: 4, logger: log });
    const pg = (await import('pg')).default;
    const killer = new pg.Client({ connectionString: PG_URL });
    await killer.connect();
    const queue = uid('dead-conn');
    try {
      const mine = new Error('the callback failed after its connection died');
      const thrown = await store
        .withTx(async (tx) => {
          await tx.enqueue(queue, 1);
          // The transaction's own backend: idle in transaction, its last statement on this test's schema.
          const killed = await killer.query<{ ok: boolean }>(
            "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE state = 'idle in transaction' AND position($1 in query) > 0",
            [db.location],
          );
          expect(killed.rows.map((r) => r.ok)).toEqual([true]);
          await waitFor('the backend to be gone', async () => {
            const r = await killer.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'idle in transaction' AND position($1 in query) > 0",
              [db.location],
            );
            return (r.rows[0] as { n: number }).n === 0;
          });
          throw mine;
        })
        .catch((err: unknown) => err);
      expect(thrown).toBe(mine);
      expect(log.warnings.some((w) => w.includes('rolling back withTx(fn)'))).toBe(true);
      expect((await store.queue(queue).stats()).pending).toBe(0);
    } finally {
      await killer.end();
      await store.close();
      await db.destroy();
    }
  });
});
