import { describe, expect, it } from '@jest/globals';
import { InvalidArgument, InvalidName, InvalidSpec, ReservedName } from '../../lib/contract/errors.js';
import {
  SCHEDULE_BOUNDARY_HEADER,
  SCHEDULE_NAME_HEADER,
  scheduleBoundaryOf,
} from '../../lib/contract/schedule-headers.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { loadVectors, type CronVectors } from '../unit/vectors.js';
import { expectError, type Runner, startRunner, uid, useEnv, waitFor } from './harness.js';

const vectors = loadVectors<CronVectors>('cron.json');

async function waitRunning(
  runner: Runner,
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  await waitFor(
    what,
    async () => {
      if (runner.error !== undefined) throw runner.error;
      return check();
    },
    timeoutMs,
    50,
  );
}

/** Every job of `queue`, claimed: the boundary each carries and the schedule it names. */
async function firedBoundaries(
  store: Store,
  queue: string,
): Promise<{ boundaries: (number | null)[]; schedules: Set<string | undefined>; enqueuedAts: Set<number> }> {
  const jobs = await store.queue(queue).claimBatch(1_000, 'boundary-reader');
  return {
    boundaries: jobs.map((j) => scheduleBoundaryOf(j)).sort((a, b) => (a ?? 0) - (b ?? 0)),
    schedules: new Set(jobs.map((j) => j.headers[SCHEDULE_NAME_HEADER])),
    enqueuedAts: new Set(jobs.map((j) => j.enqueuedAt)),
  };
}

const HOUR = 3_600_000;

async function jobCount(store: Store, queue: string): Promise<number> {
  const s = await store.queue(queue).stats();
  return s.pending + s.processing + s.dead;
}

/** Cron specs, zones, catch-up policies and the operator API (SPEC §10). */
export function cronContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('cron specs', () => {
    it('replays conformance/contract/cron.json: the first boundary after prev, per spec and zone', async () => {
      for (const v of vectors.next) {
        const name = uid('cron-vec');
        const prev = Date.parse(v.prev);
        const s = await store().schedule(name, v.spec, 'q-vectors', null, { timeZone: v.zone, startAt: prev + 1 });
        if (s.intervalMs === null) {
          expect({ note: v.note, next: new Date(s.nextFireAt).toISOString() }).toEqual({ note: v.note, next: v.next });
        } else {
          // @every starts exactly at startAt; its grid is prev + interval.
          expect({ note: v.note, next: new Date(prev + s.intervalMs).toISOString() }).toEqual({
            note: v.note,
            next: v.next,
          });
        }
        expect(s.timeZone).toBe(v.zone);
        await store().unschedule(name);
      }
    });

    it('refuses a malformed expression or an unknown zone with InvalidSpec naming it, storing nothing', async () => {
      const name = uid('cron-bad');
      for (const spec of vectors.invalidSpecs) {
        const err = await expectError(() => store().schedule(name, spec, 'q', null), InvalidSpec);
        expect(err.message).toContain(JSON.stringify(spec));
      }
      for (const zone of vectors.invalidZones) {
        const err = await expectError(
          () => store().schedule(name, '0 3 * * *', 'q', null, { timeZone: zone }),
          InvalidSpec,
        );
        expect(err.message).toContain(JSON.stringify(zone));
      }
      await expectError(
        () => store().schedule(name, '0 3 * * *', 'q', null, { catchUp: 'some' as never }),
        InvalidArgument,
      );
      await expectError(() => store().schedule(name, '0 3 * * *', '__alkstore_x', null), ReservedName);
      await expectError(() => store().schedule(name, '0 3 * * *', ' ', null), InvalidName);
      expect(await store().getSchedule(name)).toBeNull();
    });

    it('stores spec, zone, catch-up and owner; a cron schedule has no interval and starts at its next boundary', async () => {
      const name = uid('cron-store');
      const t0 = await store().now();
      const s = await store().schedule(
        name,
        '0 3 * * *',
        'nightly',
        { r: 1 },
        { timeZone: 'Europe/Berlin', catchUp: 'latest', owner: 'app:test' },
      );
      expect(s).toMatchObject({
        name,
        spec: '0 3 * * *',
        intervalMs: null,
        timeZone: 'Europe/Berlin',
        catchUp: 'latest',
        owner: 'app:test',
        paused: false,
      });
      expect(s.nextFireAt).toBeGreaterThan(t0);
      expect(s.nextFireAt - t0).toBeLessThanOrEqual(25 * 3_600_000);
      const wall = new Intl.DateTimeFormat('en-GB', {
        timeZone: 'Europe/Berlin',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
      });
      expect(wall.format(s.nextFireAt)).toBe('03:00:00');
      expect(await env.other.getSchedule(name)).toEqual(s);
      const plain = await store().schedule(uid('cron-plain'), '@every 1h', 'q', null);
      expect(plain).toMatchObject({
        timeZone: 'UTC',
        catchUp: 'all',
        owner: null,
        paused: false,
        intervalMs: 3_600_000,
      });
    });

    it('an upsert keeps the next fire for the same spec and zone, and restarts it when the zone changes', async () => {
      const name = uid('cron-upsert');
      const a = await store().schedule(name, '0 3 * * *', 'q', null, { timeZone: 'Europe/Berlin' });
      const same = await store().schedule(name, '0 3 * * *', 'q2', 'v', { timeZone: 'Europe/Berlin', catchUp: 'none' });
      expect(same).toMatchObject({ nextFireAt: a.nextFireAt, queue: 'q2', catchUp: 'none' });
      const moved = await store().schedule(name, '0 3 * * *', 'q2', 'v', { timeZone: 'America/New_York' });
      expect(moved.nextFireAt).not.toBe(a.nextFireAt);
      const wall = new Intl.DateTimeFormat('en-GB', {
        timeZone: 'America/New_York',
        hour: '2-digit',
        minute: '2-digit',
        hourCycle: 'h23',
      });
      expect(wall.format(moved.nextFireAt)).toBe('03:00');
    });
  });

  describe('runner', () => {
    it('a 6-field spec fires on its seconds: every boundary once, none before its second', async () => {
      const name = uid('cron-secs');
      const queue = uid('q-secs');
      const first = await store().schedule(name, '*/2 * * * * *', queue, 's');
      expect(first.nextFireAt % 2_000).toBe(0);
      const runner = startRunner(store());
      try {
        await waitRunning(runner, 'three boundaries fired', async () => (await jobCount(store(), queue)) >= 3);
      } finally {
        await runner.stop();
      }
      const next = (await store().getSchedule(name))!.nextFireAt;
      expect(next % 2_000).toBe(0);
      const count = (next - first.nextFireAt) / 2_000;
      expect(await jobCount(store(), queue)).toBe(count);
      const jobs = await store().queue(queue).claimBatch(count, 'w');
      const enqueued = (
        await Promise.all(jobs.map(async (j) => (await store().queue(queue).getJob(j.id))!.enqueuedAt))
      ).sort((a, b) => a - b);
      // The i-th job was enqueued at or after the i-th boundary: never early.
      enqueued.forEach((at, i) => expect(at).toBeGreaterThanOrEqual(first.nextFireAt + i * 2_000));
      await store().unschedule(name);
    });

    it('reads the spec in its zone: an hour field fires by the wall clock of Asia/Kathmandu (+05:45), not UTC', async () => {
      const now = await store().now();
      const hour = (zone: string, at: number): number =>
        Number(new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', hourCycle: 'h23' }).format(at));
      const h = hour('Asia/Kathmandu', now);
      const hours = `${h},${(h + 1) % 24}`;
      const spec = `* * ${hours} * * *`;
      const local = await store().schedule(uid('cron-ktm'), spec, uid('q-ktm'), null, { timeZone: 'Asia/Kathmandu' });
      const utc = await store().schedule(uid('cron-utc'), spec, uid('q-utc'), null);
      // Due within seconds: the current Kathmandu hour matches.
      expect(local.nextFireAt).toBeLessThan(now + 10_000);
      // In UTC those hours are 5-6 hours away (Kathmandu is UTC+05:45).
      expect(hours.split(',').map(Number)).toContain(hour('UTC', utc.nextFireAt));
      expect(utc.nextFireAt - now).toBeGreaterThan(3_600_000);
      const runner = startRunner(store());
      try {
        await waitRunning(
          runner,
          'the Kathmandu schedule to fire',
          async () => (await jobCount(store(), local.queue)) >= 2,
        );
      } finally {
        await runner.stop();
      }
      expect(await jobCount(store(), utc.queue)).toBe(0);
      await store().unschedule(local.name);
      await store().unschedule(utc.name);
    });

    for (const [policy, expected] of [
      ['all', 11],
      ['latest', 1],
      ['none', 0],
    ] as const) {
      it(`catch-up '${policy}' after 10.5 missed minutes enqueues ${expected} and skips forward past now`, async () => {
        const name = uid(`cron-catch-${policy}`);
        const queue = uid(`q-catch-${policy}`);
        const startAt = (await store().now()) - 630_000;
        await store().schedule(name, '@every 1m', queue, null, { startAt, catchUp: policy });
        const before = await store().now();
        const runner = startRunner(env.other);
        try {
          await waitRunning(
            runner,
            'the schedule to skip forward',
            async () => (await store().getSchedule(name))!.nextFireAt > before,
          );
        } finally {
          await runner.stop();
        }
        expect(await jobCount(store(), queue)).toBe(expected);
        const next = (await store().getSchedule(name))!.nextFireAt;
        expect(next - startAt).toBe(11 * 60_000);
        await store().unschedule(name);
      });
    }

    it("catch-up 'none' still fires a boundary the runner reaches within the 60 s grace, once", async () => {
      const name = uid('cron-grace');
      const queue = uid('q-grace');
      const startAt = (await store().now()) - 5_000;
      await store().schedule(name, '@every 1h', queue, null, { startAt, catchUp: 'none' });
      const runner = startRunner(store());
      try {
        await waitRunning(
          runner,
          'the late boundary to fire',
          async () => (await store().getSchedule(name))!.nextFireAt > startAt,
        );
      } finally {
        await runner.stop();
      }
      expect(await jobCount(store(), queue)).toBe(1);
      await store().unschedule(name);
    });

    it("catch-up 'all' on a cron spec fires each missed boundary, then the next one after now", async () => {
      const name = uid('cron-all');
      const queue = uid('q-all');
      const first = await store().schedule(name, '*/10 * * * * *', queue, null, {
        startAt: (await store().now()) - 45_000,
      });
      const runner = startRunner(store());
      try {
        await waitRunning(runner, 'the catch-up', async () => (await jobCount(store(), queue)) >= 4);
      } finally {
        await runner.stop();
      }
      const next = (await store().getSchedule(name))!.nextFireAt;
      expect(next % 10_000).toBe(0);
      expect(await jobCount(store(), queue)).toBe((next - first.nextFireAt) / 10_000);
      await store().unschedule(name);
    });

    it('stamps each job of a catch-up burst with its own boundary (alkstore-schedule-boundary), oldest first', async () => {
      const name = uid('boundary-burst');
      const queue = uid('q-boundary-burst');
      const startAt = (await store().now()) - 24.5 * HOUR;
      await store().schedule(name, '@every 1h', queue, { report: 'hourly' }, { startAt });
      const runner = startRunner(env.other);
      try {
        await waitRunning(runner, 'the 25-job catch-up burst', async () => (await jobCount(store(), queue)) >= 25);
      } finally {
        await runner.stop();
      }
      const { boundaries, schedules, enqueuedAts } = await firedBoundaries(store(), queue);
      expect(boundaries).toEqual(Array.from({ length: 25 }, (_, i) => startAt + i * HOUR));
      expect(schedules).toEqual(new Set([name]));
      // One tick enqueued them together: the boundary, not the enqueue time, tells them apart.
      expect(enqueuedAts.size).toBe(1);
      await store().unschedule(name);
    });

    it("stamps a cron catch-up with each boundary, and 'latest' with the latest elapsed boundary", async () => {
      const all = { name: uid('boundary-cron-all'), queue: uid('q-boundary-cron-all') };
      const latest = { name: uid('boundary-cron-latest'), queue: uid('q-boundary-cron-latest') };
      const every = { name: uid('boundary-every-latest'), queue: uid('q-boundary-every-latest') };
      const before = await store().now();
      await store().schedule(all.name, '0 * * * *', all.queue, null, { startAt: before - 5.5 * HOUR });
      await store().schedule(latest.name, '0 * * * *', latest.queue, null, {
        startAt: before - 30 * HOUR,
        catchUp: 'latest',
      });
      const everyStart = before - 10.5 * 60_000;
      await store().schedule(every.name, '@every 1m', every.queue, null, { startAt: everyStart, catchUp: 'latest' });
      const runner = startRunner(env.other);
      try {
        await waitRunning(runner, 'the three schedules to skip forward', async () => {
          const next = await Promise.all(
            [all, latest, every].map(async (s) => (await store().getSchedule(s.name))!.nextFireAt),
          );
          return next.every((n) => n > before);
        });
      } finally {
        await runner.stop();
      }
      const after = await store().now();
      const topOfHour = Math.floor(after / HOUR) * HOUR;
      const fromAll = (await firedBoundaries(store(), all.queue)).boundaries;
      // The first top of the hour at or after startAt, then every hour up to now.
      const first = Math.ceil((before - 5.5 * HOUR) / HOUR) * HOUR;
      expect(fromAll).toEqual(Array.from({ length: (topOfHour - first) / HOUR + 1 }, (_, i) => first + i * HOUR));
      expect((await firedBoundaries(store(), latest.queue)).boundaries).toEqual([topOfHour]);
      expect((await firedBoundaries(store(), every.queue)).boundaries).toEqual([everyStart + 10 * 60_000]);
      for (const s of [all, latest, every]) await store().unschedule(s.name);
    });

    it('a triggered run carries the database time of the trigger as its boundary; a plain job carries none', async () => {
      const name = uid('boundary-trigger');
      const queue = uid('q-boundary-trigger');
      await store().schedule(name, '0 3 * * *', queue, null);
      const before = await store().now();
      const id = (await env.other.triggerSchedule(name))!;
      const after = await store().now();
      const job = (await store().queue(queue).getJob(id))!;
      expect(job.headers[SCHEDULE_NAME_HEADER]).toBe(name);
      const boundary = scheduleBoundaryOf(job)!;
      expect(boundary).toBeGreaterThanOrEqual(before);
      expect(boundary).toBeLessThanOrEqual(after);
      expect(job.headers[SCHEDULE_BOUNDARY_HEADER]).toBe(String(boundary));
      const plain = (await store()
        .queue(queue)
        .getJob(await store().queue(queue).enqueue(1)))!;
      expect(scheduleBoundaryOf(plain)).toBeNull();
      await store().unschedule(name);
    });

    it('validates lockTtlMs and renewIntervalMs before taking the lock', async () => {
      for (const opts of [
        { lockTtlMs: 999 },
        { lockTtlMs: 2 ** 31 },
        { lockTtlMs: 1.5e3 + 0.5 },
        { lockTtlMs: 4_000, renewIntervalMs: 2_001 },
        { renewIntervalMs: 0 },
      ]) {
        const err = await expectError(() => store().runSchedules(new AbortController().signal, opts), InvalidArgument);
        expect(err.message).toMatch(/lockTtlMs|renewIntervalMs/);
      }
      expect((await store().listSchedules()).leader).toBeNull();
    });

    it('a runner with a short lock TTL renews it while leading', async () => {
      const runner = startRunner(store(), { owner: 'short-ttl', lockTtlMs: 1_000, renewIntervalMs: 200 });
      try {
        await waitRunning(
          runner,
          'the runner to lead',
          async () => (await store().listSchedules()).leader?.owner === 'short-ttl',
        );
        const first = (await store().listSchedules()).leader!.expiresAt;
        await waitRunning(
          runner,
          'a renewed lock',
          async () => ((await store().listSchedules()).leader?.expiresAt ?? 0) > first,
        );
        expect(runner.error).toBeUndefined();
      } finally {
        await runner.stop();
      }
    });
  });

  describe('operator API', () => {
    it('listSchedules shows every schedule and the leading runner while one runs', async () => {
      const name = uid('cron-list');
      await store().schedule(name, '*/5 * * * *', 'q-list', null, { timeZone: 'Asia/Tokyo', owner: 'o' });
      const idle = await env.other.listSchedules();
      expect(idle.leader).toBeNull();
      expect(idle.now).toBeGreaterThan(0);
      const row = idle.schedules.find((s) => s.name === name);
      expect(row).toMatchObject({ spec: '*/5 * * * *', timeZone: 'Asia/Tokyo', owner: 'o', paused: false });
      const names = idle.schedules.map((s) => s.name);
      expect(names).toEqual([...names].sort());
      const runner = startRunner(store(), { owner: 'list-runner' });
      try {
        await waitRunning(
          runner,
          'the runner to lead',
          async () => (await env.other.listSchedules()).leader?.owner === 'list-runner',
        );
        const led = await env.other.listSchedules();
        expect(led.leader!.expiresAt).toBeGreaterThan(led.now);
      } finally {
        await runner.stop();
      }
      expect((await env.other.listSchedules()).leader).toBeNull();
      await store().unschedule(name);
    });

    it('a paused schedule fires nothing, and resumes from its next boundary without firing what it missed', async () => {
      const name = uid('cron-pause');
      const queue = uid('q-pause');
      await store().schedule(name, '@every 1s', queue, 'p', { startAt: await store().now() });
      expect(await env.other.pauseSchedule(name)).toBe(true);
      expect((await store().getSchedule(name))!.paused).toBe(true);
      const runner = startRunner(store());
      let resumed: Awaited<ReturnType<Store['getSchedule']>> = null;
      try {
        const start = (await store().getSchedule(name))!.nextFireAt;
        // The runner moves a paused schedule forward without firing it.
        await waitRunning(
          runner,
          'three paused boundaries to pass',
          async () => (await store().getSchedule(name))!.nextFireAt >= start + 3_000,
        );
        expect(await jobCount(store(), queue)).toBe(0);
        // An upsert (a redeploy re-declaring it) keeps the pause.
        expect((await store().schedule(name, '@every 1s', queue, 'p')).paused).toBe(true);
        expect(await env.other.resumeSchedule(name)).toBe(true);
        resumed = await store().getSchedule(name);
        expect(resumed!.paused).toBe(false);
        expect(resumed!.nextFireAt).toBeGreaterThan((await store().now()) - 1_000);
        await waitRunning(runner, 'a fire after resume', async () => (await jobCount(store(), queue)) >= 1);
      } finally {
        await runner.stop();
      }
      // No backlog of the paused boundaries: exactly the boundaries since resume fired.
      const after = await store().getSchedule(name);
      expect(await jobCount(store(), queue)).toBe((after!.nextFireAt - resumed!.nextFireAt) / 1_000);
      expect(await store().pauseSchedule(uid('cron-none'))).toBe(false);
      expect(await store().resumeSchedule(uid('cron-none'))).toBe(false);
      await store().unschedule(name);
    });

    it('triggerSchedule enqueues one job now with the schedule options, even while paused, and keeps the next fire', async () => {
      const name = uid('cron-trigger');
      const queue = uid('q-trigger');
      const s = await store().schedule(
        name,
        '0 3 * * *',
        queue,
        { kind: 'manual' },
        { timeZone: 'Europe/Berlin', priority: 3, maxAttempts: 2 },
      );
      await store().pauseSchedule(name);
      const id = await env.other.triggerSchedule(name);
      expect(typeof id).toBe('number');
      const job = await store().queue(queue).getJob(id!);
      expect(job).toMatchObject({ payload: { kind: 'manual' }, priority: 3, maxAttempts: 2, state: 'pending' });
      expect(await jobCount(store(), queue)).toBe(1);
      expect((await store().getSchedule(name))!.nextFireAt).toBe(s.nextFireAt);
      expect(await store().triggerSchedule(uid('cron-none'))).toBeNull();
      await expectError(() => store().triggerSchedule('__alkstore_x'), ReservedName);
      await expectError(() => store().pauseSchedule(''), InvalidName);
      await store().unschedule(name);
    });
  });
}
