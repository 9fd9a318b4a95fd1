import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type Type } from '@nestjs/common';
import { Cron, CronExpression, Interval, ScheduleModule, Timeout } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job, Store as StoreApi } from '../../lib/contract/types.js';
import { InvalidSpec } from '../../lib/contract/errors.js';
import {
  AlkstoreModule,
  InvalidHandler,
  Scheduled,
  SchedulerConflict,
  type AlkstoreModuleOptions,
} from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

/** Runs of decorated methods, by application. */
const runs: { app: string; what: string; job?: number }[] = [];
let currentApp = '';

@Injectable()
class EverySecond {
  readonly app = currentApp;

  @Scheduled('cron-second', '* * * * * *', { timeZone: 'Europe/Berlin' })
  async tick(job: Job): Promise<void> {
    runs.push({ app: this.app, what: 'cron-second', job: job.id });
  }
}

@Injectable()
class EveryTwoSeconds {
  readonly app = currentApp;

  @Scheduled('handoff', '*/2 * * * * *', { catchUp: 'latest' })
  async tick(job: Job): Promise<void> {
    runs.push({ app: this.app, what: 'handoff', job: job.id });
  }
}

@Injectable()
class LegacyJobs {
  readonly app = currentApp;

  @Cron(CronExpression.EVERY_SECOND, { name: 'legacy-cron', timeZone: 'America/New_York' })
  named(): void {
    runs.push({ app: this.app, what: 'legacy-cron' });
  }

  @Cron('*/2 * * * * *')
  unnamed(): void {
    runs.push({ app: this.app, what: 'LegacyJobs.unnamed' });
  }

  @Interval('legacy-interval', 1000)
  interval(): void {
    runs.push({ app: this.app, what: 'legacy-interval' });
  }

  @Timeout(50)
  once(): void {
    runs.push({ app: this.app, what: 'timeout' });
  }
}

@Injectable()
class Kept {
  @Scheduled('kept', '0 3 * * *', { timeZone: 'Europe/Berlin', catchUp: 'none' })
  async run(): Promise<void> {}
}

@Injectable()
class BadSpec {
  @Scheduled('bad-spec', '61 * * * *')
  async run(): Promise<void> {}
}

@Injectable()
class BadZone {
  @Scheduled('bad-zone', '0 3 * * *', { timeZone: 'Europe/Nowhere' })
  async run(): Promise<void> {}
}

@Injectable()
class Ambiguous {
  @Cron('0 3 * * *')
  @Scheduled('ambiguous', '0 4 * * *')
  async run(): Promise<void> {}
}

@Injectable()
class OddInterval {
  @Interval(1500)
  run(): void {}
}

function count(what: string, app?: string): number {
  return runs.filter((r) => r.what === what && (app === undefined || r.app === app)).length;
}

async function boot(
  db: NestDb,
  app: string,
  providers: Type[],
  extra: AlkstoreModuleOptions = {},
  imports: unknown[] = [],
): Promise<TestingModule> {
  currentApp = app;
  const mod = await Test.createTestingModule({
    imports: [
      AlkstoreModule.forRoot(db.moduleOptions({ idlePollIntervalMs: 200, workerId: app, ...extra })),
      ...(imports as never[]),
    ],
    providers,
  }).compile();
  await mod.init();
  return mod;
}

/** Boot must fail with `cls`; returns the error. */
async function bootFails(
  db: NestDb,
  providers: Type[],
  extra: AlkstoreModuleOptions = {},
  imports: unknown[] = [],
): Promise<Error> {
  let caught: unknown;
  let mod: TestingModule | undefined;
  try {
    mod = await boot(db, 'failing', providers, extra, imports);
  } catch (err) {
    caught = err;
  }
  await mod?.close();
  if (!(caught instanceof Error)) throw new Error('expected startup to fail, but it succeeded');
  return caught;
}

for (const engine of nestEngines()) {
  describe(`cron schedules in Nest [${engine.name}]`, () => {
    let db: NestDb;
    let admin: TestingModule;
    let store: StoreApi;
    beforeAll(async () => {
      db = await engine.create();
      admin = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off' }))],
      }).compile();
      await admin.init();
      store = admin.get(Store);
    }, 60_000);
    afterAll(async () => {
      await admin?.close();
      await db?.destroy();
    }, 60_000);

    it('two application instances run a 1-second cron method once per boundary, for 10 boundaries and more', async () => {
      runs.length = 0;
      const first = await store.schedule('cron-second', '* * * * * *', 'scheduled:cron-second', null, {
        timeZone: 'Europe/Berlin',
        startAt: (await store.now()) + 1_000,
        owner: 'alkstore:nest',
      });
      const a = await boot(db, 'a', [EverySecond]);
      let b: TestingModule | undefined;
      try {
        b = await boot(db, 'b', [EverySecond]);
        await waitFor('ten runs', () => count('cron-second') >= 10, 60_000);
      } finally {
        await a.close();
        await b?.close();
      }
      const last = (await store.getSchedule('cron-second'))!;
      expect(last).toMatchObject({
        spec: '* * * * * *',
        timeZone: 'Europe/Berlin',
        owner: 'alkstore:nest',
        intervalMs: null,
      });
      const fired = (last.nextFireAt - first.nextFireAt) / 1_000;
      const left = await store.queue('scheduled:cron-second').stats();
      const ids = runs.map((r) => r.job);
      expect(new Set(ids).size).toBe(ids.length);
      // Every boundary became exactly one job, run once by one of the two instances.
      expect(count('cron-second') + left.pending + left.processing + left.dead).toBe(fired);
      expect(count('cron-second')).toBeGreaterThanOrEqual(10);
    }, 90_000);

    it('closing the leading instance hands leadership over: the other fires the next boundary well within the 60 s lock TTL', async () => {
      runs.length = 0;
      const a = await boot(db, 'lead-a', [EveryTwoSeconds]);
      let b: TestingModule | undefined;
      try {
        await waitFor('lead-a to lead', async () => (await store.listSchedules()).leader?.owner === 'lead-a', 20_000);
        b = await boot(db, 'lead-b', [EveryTwoSeconds]);
        await waitFor('a first run', () => count('handoff') >= 1, 20_000);
        await a.close();
        // The first boundary after lead-a stopped: only a released lock lets lead-b fire it before the TTL ends.
        const boundary = Math.floor((await store.now()) / 2_000) * 2_000 + 2_000;
        await waitFor(
          'lead-b to fire the next boundary',
          async () => (await store.getSchedule('handoff'))!.nextFireAt > boundary,
          20_000,
        );
        expect((await store.listSchedules()).leader?.owner).toBe('lead-b');
        await waitFor('lead-b to run it', () => count('handoff', 'lead-b') >= 1, 20_000);
      } finally {
        await a.close();
        await b?.close();
      }
    }, 90_000);

    it("nestSchedule: 'cluster' takes over @Cron and @Interval: once per boundary across instances; @Timeout stays per process", async () => {
      runs.length = 0;
      const startAt = (await store.now()) + 1_000;
      const firstCron = await store.schedule('legacy-cron', '* * * * * *', 'scheduled:legacy-cron', null, {
        timeZone: 'America/New_York',
        startAt,
        owner: 'alkstore:nest',
      });
      const firstEvery = await store.schedule('legacy-interval', '@every 1s', 'scheduled:legacy-interval', null, {
        startAt,
        owner: 'alkstore:nest',
      });
      const a = await boot(db, 'x', [LegacyJobs], { nestSchedule: 'cluster' });
      let b: TestingModule | undefined;
      try {
        b = await boot(db, 'y', [LegacyJobs], { nestSchedule: 'cluster' });
        const { schedules } = await store.listSchedules();
        const byName = new Map(schedules.map((s) => [s.name, s]));
        expect(byName.get('legacy-cron')).toMatchObject({
          spec: '* * * * * *',
          timeZone: 'America/New_York',
          catchUp: 'none',
          queue: 'scheduled:legacy-cron',
        });
        expect(byName.get('LegacyJobs.unnamed')).toMatchObject({ spec: '*/2 * * * * *', timeZone: 'UTC' });
        expect(byName.get('legacy-interval')).toMatchObject({ spec: '@every 1s', intervalMs: 1_000 });
        await waitFor(
          'runs of every taken-over method',
          () => count('legacy-cron') >= 4 && count('legacy-interval') >= 4 && count('LegacyJobs.unnamed') >= 2,
          60_000,
        );
        await waitFor(
          'the @Timeout of each process',
          () => count('timeout', 'x') === 1 && count('timeout', 'y') === 1,
          10_000,
        );
      } finally {
        await a.close();
        await b?.close();
      }
      for (const first of [firstCron, firstEvery]) {
        const last = (await store.getSchedule(first.name))!;
        const stats = await store.queue(first.queue).stats();
        // Every boundary became one job, run at most once across both instances.
        expect(count(first.name) + stats.pending + stats.processing + stats.dead).toBe(
          (last.nextFireAt - first.nextFireAt) / 1_000,
        );
      }
    }, 90_000);

    it('removes owned schedules whose method is gone, logged once by name; store.schedule() ones stay', async () => {
      await store.schedule('gone', '@every 1h', 'scheduled:gone', null, { owner: 'alkstore:nest' });
      await store.schedule('other-app', '@every 1h', 'scheduled:other', null, { owner: 'billing-service' });
      await store.schedule('manual', '@every 1h', 'manual-q', null);
      const logger = new MemoryLogger();
      const app = await boot(db, 'orphans', [Kept], { logger });
      try {
        const names = (await store.listSchedules()).schedules.map((s) => s.name);
        expect(names).toContain('kept');
        expect(names).toContain('manual');
        expect(names).toContain('other-app');
        expect(names).not.toContain('gone');
        expect(logger.lines.filter((l) => l.includes('"gone"'))).toHaveLength(1);
        expect((await store.getSchedule('kept'))!).toMatchObject({
          catchUp: 'none',
          timeZone: 'Europe/Berlin',
          owner: 'alkstore:nest',
        });
      } finally {
        await app.close();
      }
      const again = new MemoryLogger();
      const second = await boot(db, 'orphans-2', [Kept], { logger: again });
      await second.close();
      expect(again.lines.filter((l) => l.includes('"gone"'))).toHaveLength(0);
    }, 60_000);

    it('fails startup with a typed error naming the method for a bad expression, a bad zone, an ambiguous method or an odd interval', async () => {
      const spec = await bootFails(db, [BadSpec]);
      expect(spec).toBeInstanceOf(InvalidHandler);
      expect(spec.message).toContain('BadSpec.run');
      expect(spec.message).toContain('"61 * * * *"');
      expect((spec as InvalidHandler).cause).toBeInstanceOf(InvalidSpec);
      const zone = await bootFails(db, [BadZone]);
      expect(zone).toBeInstanceOf(InvalidHandler);
      expect(zone.message).toContain('"Europe/Nowhere"');
      const ambiguous = await bootFails(db, [Ambiguous], { nestSchedule: 'cluster' });
      expect(ambiguous).toBeInstanceOf(InvalidHandler);
      expect(ambiguous.message).toMatch(/Ambiguous\.run is ambiguous.*@Cron.*@Scheduled/);
      const odd = await bootFails(db, [OddInterval], { nestSchedule: 'cluster' });
      expect(odd.message).toContain('OddInterval.run');
      expect(await store.getSchedule('bad-spec')).toBeNull();
      expect(await store.getSchedule('bad-zone')).toBeNull();
    }, 60_000);

    it("fails startup when ScheduleModule.forRoot() is imported next to nestSchedule: 'cluster'", async () => {
      const err = await bootFails(db, [LegacyJobs], { nestSchedule: 'cluster' }, [ScheduleModule.forRoot()]);
      expect(err).toBeInstanceOf(SchedulerConflict);
      expect(err.message).toContain('ScheduleModule.forRoot()');
    }, 60_000);

    it('refuses bad scheduler options at startup', async () => {
      const ttl = await bootFails(db, [Kept], { schedulerLockTtlMs: 10 });
      expect(ttl.message).toContain('schedulerLockTtlMs');
      const renew = await bootFails(db, [Kept], { schedulerLockTtlMs: 10_000, schedulerRenewIntervalMs: 6_000 });
      expect(renew.message).toContain('schedulerRenewIntervalMs');
      const mode = await bootFails(db, [Kept], { nestSchedule: 'everywhere' as never });
      expect(mode.message).toContain('nestSchedule');
    }, 60_000);
  });
}
