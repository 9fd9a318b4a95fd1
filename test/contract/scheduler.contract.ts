import { describe, expect, it } from '@jest/globals';
import { InvalidName, InvalidSpec, ReservedName } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, pause, type Runner, startRunner, uid, useEnv, waitFor, within } from './harness.js';

/** waitFor that fails at once (with the runner's error) when a runner died instead of timing out. */
async function waitRunning(
  runners: Runner[],
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  await waitFor(
    what,
    async () => {
      for (const r of runners) if (r.error !== undefined) throw r.error;
      return check();
    },
    timeoutMs,
    50,
  );
}

async function pendingCount(store: Store, queue: string): Promise<number> {
  return (await store.queue(queue).stats()).pending;
}

/** Scheduler (SPEC §7, seed 002 scheduler + verification backlog "scheduler depth on both engines"). */
export function schedulerContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('schedules', () => {
    it('rejects anything but "@every <n><s|m|h|d>" or a cron expression with InvalidSpec, storing nothing', async () => {
      const name = uid('sched-spec');
      for (const spec of [
        '*/5 * * *',
        '0 0 * * * * *',
        '@dayly',
        '@reboot',
        '@every 0s',
        '@every 1x',
        'every 1s',
        '@every',
        '',
      ]) {
        const err = await expectError(() => store().schedule(name, spec, 'q', null), InvalidSpec);
        expect(err.message).toContain(JSON.stringify(spec));
      }
      expect(await store().getSchedule(name)).toBeNull();
    });

    it('validates the schedule name and the target queue name', async () => {
      await expectError(() => store().schedule('__alkstore_x', '@every 1s', 'q', null), ReservedName);
      await expectError(() => store().schedule('', '@every 1s', 'q', null), InvalidName);
      await expectError(() => store().schedule(uid('sched-q'), '@every 1s', '__alkstore_outbox:x', null), ReservedName);
      await expectError(() => store().schedule(uid('sched-q'), '@every 1s', ' ', null), InvalidName);
    });

    it('stores the schedule with its interval, options and a first fire of now + interval', async () => {
      const name = uid('sched-store');
      const t0 = await store().now();
      const s = await store().schedule(
        name,
        '@every 90m',
        'reports',
        { kind: 'daily' },
        { priority: 2, maxAttempts: 4, expiresInMs: 1_000 },
      );
      const t1 = await store().now();
      expect(s).toMatchObject({
        name,
        spec: '@every 90m',
        intervalMs: 5_400_000,
        queue: 'reports',
        payload: { kind: 'daily' },
        priority: 2,
        maxAttempts: 4,
        expiresInMs: 1_000,
      });
      expect(s.nextFireAt).toBeGreaterThanOrEqual(t0 + 5_400_000);
      expect(s.nextFireAt).toBeLessThanOrEqual(t1 + 5_400_000);
      expect(await env.other.getSchedule(name)).toEqual(s);
      const plain = await store().schedule(uid('sched-plain'), '@every 1h', 'reports', null);
      expect(plain).toMatchObject({ priority: 0, maxAttempts: null, expiresInMs: null, payload: null });
    });

    it('upserts by name: the same spec keeps the next fire, a new spec restarts it', async () => {
      const name = uid('sched-upsert');
      const startAt = (await store().now()) + 123_456;
      const first = await store().schedule(name, '@every 1h', 'q1', 'v1', { startAt });
      expect(first.nextFireAt).toBe(startAt);
      const same = await store().schedule(name, '@every 1h', 'q2', 'v2', { priority: 7, startAt: startAt + 999 });
      expect(same).toMatchObject({ nextFireAt: startAt, queue: 'q2', payload: 'v2', priority: 7 });
      expect((await store().getSchedule(name))!.nextFireAt).toBe(startAt);
      const t0 = await store().now();
      const changed = await store().schedule(name, '@every 2h', 'q2', 'v3');
      const t1 = await store().now();
      expect(changed.intervalMs).toBe(7_200_000);
      expect(changed.nextFireAt).toBeGreaterThanOrEqual(t0 + 7_200_000);
      expect(changed.nextFireAt).toBeLessThanOrEqual(t1 + 7_200_000);
      const restartAt = t1 + 5_000;
      expect((await store().schedule(name, '@every 3h', 'q2', 'v4', { startAt: restartAt })).nextFireAt).toBe(
        restartAt,
      );
    });

    it('unschedule removes the schedule and reports whether it existed', async () => {
      const name = uid('sched-un');
      await store().schedule(name, '@every 1h', 'q', null);
      expect(await env.other.unschedule(name)).toBe(true);
      expect(await store().getSchedule(name)).toBeNull();
      expect(await store().unschedule(name)).toBe(false);
    });

    it('never fires without a runner', async () => {
      const name = uid('sched-idle');
      const queue = uid('q-idle');
      const startAt = (await store().now()) - 5_000;
      await store().schedule(name, '@every 1s', queue, 'x', { startAt });
      await pause(1_500);
      expect(await pendingCount(store(), queue)).toBe(0);
      expect((await store().getSchedule(name))!.nextFireAt).toBe(startAt);
      await store().unschedule(name);
    });
  });

  describe('runSchedules', () => {
    it('fires every boundary into the named queue with the schedule options stamped', async () => {
      const name = uid('sched-fire');
      const queue = uid('q-fire');
      store().queue(queue, { leaseMs: 4_321 });
      const startAt = await store().now();
      await store().schedule(
        name,
        '@every 1s',
        queue,
        { tick: true },
        { startAt, priority: 4, maxAttempts: 2, expiresInMs: 600_000 },
      );
      const runner = startRunner(store());
      try {
        await waitRunning([runner], 'two boundaries fired', async () => (await pendingCount(store(), queue)) >= 2);
      } finally {
        await runner.stop();
      }
      const next = (await store().getSchedule(name))!.nextFireAt;
      const count = await pendingCount(store(), queue);
      // Every boundary from startAt up to (not including) the stored next fire was enqueued exactly once.
      expect((next - startAt) % 1_000).toBe(0);
      expect(count).toBe((next - startAt) / 1_000);
      const jobs = await store().queue(queue).claimBatch(count, 'w');
      expect(jobs).toHaveLength(count);
      for (const j of jobs) {
        expect(j).toMatchObject({ payload: { tick: true }, priority: 4, maxAttempts: 2 });
        const info = (await store().queue(queue).getJob(j.id))!;
        expect(info.visibilityTimeoutMs).toBe(4_321);
        expect(info.expiresAt! - info.enqueuedAt).toBeGreaterThanOrEqual(600_000);
        expect(info.expiresAt! - info.enqueuedAt).toBeLessThanOrEqual(600_050);
      }
      await store().unschedule(name);
    });

    it('catches up at most 64 boundaries and skips forward past now', async () => {
      const name = uid('sched-catchup');
      const queue = uid('q-catchup');
      const interval = 60_000;
      const startAt = (await store().now()) - 1_000 * interval;
      await store().schedule(name, '@every 1m', queue, 'c', { startAt });
      const before = await store().now();
      const runner = startRunner(env.other);
      try {
        await waitRunning([runner], 'the catch-up batch', async () => (await pendingCount(store(), queue)) >= 64);
      } finally {
        await runner.stop();
      }
      const now = await store().now();
      const next = (await store().getSchedule(name))!.nextFireAt;
      expect(await pendingCount(store(), queue)).toBe(64);
      expect(next).toBeGreaterThan(before);
      expect(next - now).toBeLessThanOrEqual(interval);
      expect((next - startAt) % interval).toBe(0);
      expect(next - startAt).toBeGreaterThan(64 * interval);
      await store().unschedule(name);
    });

    it('two runners on one database do not double-fire a boundary', async () => {
      const name = uid('sched-two');
      const queue = uid('q-two');
      const startAt = await store().now();
      await store().schedule(name, '@every 1s', queue, 't', { startAt });
      const a = startRunner(store(), { owner: 'runner-a' });
      const b = startRunner(env.other, { owner: 'runner-b' });
      try {
        await waitRunning(
          [a, b],
          'three boundaries fired',
          async () => (await pendingCount(store(), queue)) >= 3,
          20_000,
        );
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      const next = (await store().getSchedule(name))!.nextFireAt;
      expect(await pendingCount(store(), queue)).toBe((next - startAt) / 1_000);
      await store().unschedule(name);
    });

    it('an aborted runner releases leadership so another runner takes over at once', async () => {
      const name = uid('sched-handover');
      const queue = uid('q-handover');
      const first = startRunner(store(), { owner: 'first' });
      await pause(200);
      expect(first.error).toBeUndefined();
      await first.stop();
      // The lock TTL is 60 s: only a released lock lets the second runner fire within the deadline.
      await store().schedule(name, '@every 1s', queue, 'h', { startAt: await store().now() });
      const second = startRunner(env.other, { owner: 'second' });
      try {
        await waitRunning(
          [second],
          'a fire from the second runner',
          async () => (await pendingCount(store(), queue)) >= 1,
        );
      } finally {
        await second.stop();
      }
      await store().unschedule(name);
    });

    it('picks up a schedule created on another store while running', async () => {
      const name = uid('sched-late');
      const queue = uid('q-late');
      const runner = startRunner(store(), { maxTickMs: 5_000 });
      try {
        await pause(200);
        await env.other.schedule(name, '@every 1s', queue, 'l', { startAt: (await store().now()) + 100 });
        await waitRunning(
          [runner],
          'a fire of the new schedule',
          async () => (await pendingCount(store(), queue)) >= 1,
        );
      } finally {
        await runner.stop();
      }
      await store().unschedule(name);
    });

    it('unschedule stops further fires', async () => {
      const name = uid('sched-stop');
      const queue = uid('q-stop');
      await store().schedule(name, '@every 1s', queue, 's', { startAt: await store().now() });
      const runner = startRunner(store());
      try {
        await waitRunning([runner], 'a first fire', async () => (await pendingCount(store(), queue)) >= 1);
        expect(await env.other.unschedule(name)).toBe(true);
        const count = await pendingCount(store(), queue);
        await pause(2_500);
        expect(await pendingCount(store(), queue)).toBe(count);
      } finally {
        await runner.stop();
      }
    });

    it('resolves at once for an aborted signal, and on abort while running', async () => {
      await within('runSchedules with an aborted signal', 5_000, store().runSchedules(AbortSignal.abort()));
      const runner = startRunner(store());
      await pause(300);
      expect(runner.error).toBeUndefined();
      await runner.stop();
    });
  });
}
