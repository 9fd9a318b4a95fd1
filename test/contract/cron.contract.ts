import { describe, expect, it } from '@jest/globals';
import { InvalidArgument, InvalidName, InvalidSpec, ReservedName } from '../../lib/contract/errors.js';
import type { RunSchedulesOpts, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { loadVectors, type CronVectors } from '../unit/vectors.js';
import { expectError, uid, useEnv, waitFor, within } from './harness.js';

const vectors = loadVectors<CronVectors>('cron.json');

interface Runner {
  stop(): Promise<void>;
  readonly error: unknown;
}

function startRunner(store: Store, opts: RunSchedulesOpts = {}): Runner {
  const ac = new AbortController();
  const result = store.runSchedules(ac.signal, { maxTickMs: 100, ...opts });
  let error: unknown;
  result.catch((err: unknown) => {
    error = err ?? new Error('runSchedules rejected');
  });
  return {
    get error() {
      return error;
    },
    async stop() {
      ac.abort();
      await within('runSchedules after abort', 15_000, result);
    },
  };
}

async function waitRunning(runner: Runner, what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
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
          expect({ note: v.note, next: new Date(prev + s.intervalMs).toISOString() }).toEqual({ note: v.note, next: v.next });
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
        const err = await expectError(() => store().schedule(name, '0 3 * * *', 'q', null, { timeZone: zone }), InvalidSpec);
        expect(err.message).toContain(JSON.stringify(zone));
      }
      await expectError(() => store().schedule(name, '0 3 * * *', 'q', null, { catchUp: 'some' as never }), InvalidArgument);
      await expectError(() => store().schedule(name, '0 3 * * *', '__alkstore_x', null), ReservedName);
      await expectError(() => store().schedule(name, '0 3 * * *', ' ', null), InvalidName);
      expect(await store().getSchedule(name)).toBeNull();
    });

    it('stores spec, zone, catch-up and owner; a cron schedule has no interval and starts at its next boundary', async () => {
      const name = uid('cron-store');
      const t0 = await store().now();
      const s = await store().schedule(name, '0 3 * * *', 'nightly', { r: 1 }, { timeZone: 'Europe/Berlin', catchUp: 'latest', owner: 'app:test' });
      expect(s).toMatchObject({ name, spec: '0 3 * * *', intervalMs: null, timeZone: 'Europe/Berlin', catchUp: 'latest', owner: 'app:test', paused: false });
      expect(s.nextFireAt).toBeGreaterThan(t0);
      expect(s.nextFireAt - t0).toBeLessThanOrEqual(25 * 3_600_000);
      const wall = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
      expect(wall.format(s.nextFireAt)).toBe('03:00:00');
      expect(await env.other.getSchedule(name)).toEqual(s);
      const plain = await store().schedule(uid('cron-plain'), '@every 1h', 'q', null);
      expect(plain).toMatchObject({ timeZone: 'UTC', catchUp: 'all', owner: null, paused: false, intervalMs: 3_600_000 });
    });

    it('an upsert keeps the next fire for the same spec and zone, and restarts it when the zone changes', async () => {
      const name = uid('cron-upsert');
      const a = await store().schedule(name, '0 3 * * *', 'q', null, { timeZone: 'Europe/Berlin' });
      const same = await store().schedule(name, '0 3 * * *', 'q2', 'v', { timeZone: 'Europe/Berlin', catchUp: 'none' });
      expect(same).toMatchObject({ nextFireAt: a.nextFireAt, queue: 'q2', catchUp: 'none' });
      const moved = await store().schedule(name, '0 3 * * *', 'q2', 'v', { timeZone: 'America/New_York' });
      expect(moved.nextFireAt).not.toBe(a.nextFireAt);
      const wall = new Intl.DateTimeFormat('en-GB', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
      expect(wall.format(moved.nextFireAt)).toBe('03:00');
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
        await waitRunning(runner, 'the runner to lead', async () => (await env.other.listSchedules()).leader?.owner === 'list-runner');
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
        await waitRunning(runner, 'three paused boundaries to pass', async () => (await store().getSchedule(name))!.nextFireAt >= start + 3_000);
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
      const s = await store().schedule(name, '0 3 * * *', queue, { kind: 'manual' }, { timeZone: 'Europe/Berlin', priority: 3, maxAttempts: 2 });
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
