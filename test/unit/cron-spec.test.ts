import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from '@jest/globals';
import { Cron } from 'croner';
import { InvalidSpec } from '../../lib/contract/errors.js';
import {
  CATCH_UP_GRACE_MS,
  NEVER_MS,
  dueFireBoundaries,
  dueFires,
  firstFireAt,
} from '../../lib/contract/schedule-spec.js';
import { parseScheduleSpec } from '../../lib/internal/load-cron.js';
import { loadVectors, type CronVectors } from './vectors.js';

const v = loadVectors<CronVectors>('cron.json');
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

describe('cron specs (conformance/contract/cron.json)', () => {
  it.each(v.next.map((x) => [x.note, x] as const))('%s', async (_note, x) => {
    const spec = await parseScheduleSpec(x.spec, x.zone);
    expect(iso(spec.nextAfter(Date.parse(x.prev)))).toBe(x.next);
  });

  it('refuses every invalid spec and zone with InvalidSpec quoting it', async () => {
    for (const bad of v.invalidSpecs) {
      const err = await parseScheduleSpec(bad, 'UTC').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidSpec);
      expect((err as Error).message).toContain(JSON.stringify(bad));
    }
    for (const zone of v.invalidZones) {
      const err = await parseScheduleSpec('0 3 * * *', zone).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidSpec);
      expect((err as Error).message).toContain(JSON.stringify(zone));
    }
  });

  it('agrees with croner stepping natively in the zone wherever SPEC and croner agree: fixed times, and any spec away from a DST change', async () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'UTC'];
    const specs = [
      '30 2 * * *',
      '0 9 * * MON-FRI',
      '15 4 1 * *',
      '*/7 * * * *',
      '0 */3 * * *',
      '10,40 * * * * *',
      '0 0 29 2 *',
      '@daily',
    ];
    const fixed = new Set(['30 2 * * *', '0 9 * * MON-FRI', '15 4 1 * *', '0 0 29 2 *', '@daily']);
    let compared = 0;
    for (const zone of zones) {
      for (const spec of specs) {
        const ours = await parseScheduleSpec(spec, zone);
        const native = new Cron(spec, { timezone: zone });
        for (let t = Date.UTC(2026, 0, 1, 0, 7, 13); t < Date.UTC(2027, 0, 1); t += 3 * 86_400_000 + 3_917_000) {
          const expected = native.nextRun(new Date(t))!.getTime();
          const offsetAround = (ms: number) =>
            new Set(
              [-4, 0, 4].map((h) =>
                new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' }).format(
                  ms + h * 3_600_000,
                ),
              ),
            );
          // Interval specs differ from croner on purpose inside a DST change (SPEC §10); skip those instants.
          if (!fixed.has(spec) && (offsetAround(t).size > 1 || offsetAround(expected).size > 1)) continue;
          expect({ spec, zone, t: iso(t), next: iso(ours.nextAfter(t)) }).toEqual({
            spec,
            zone,
            t: iso(t),
            next: iso(expected),
          });
          compared += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(3_000);
  });

  it('the first fire: @every starts at startAt or now + interval; cron at the first match at or after startAt, else after now', async () => {
    const every = await parseScheduleSpec('@every 5m');
    expect(firstFireAt(every, 1_000, null)).toBe(301_000);
    expect(firstFireAt(every, 1_000, 7)).toBe(7);
    const hourly = await parseScheduleSpec('0 * * * *');
    const t = Date.UTC(2026, 0, 1, 10);
    expect(firstFireAt(hourly, t, t)).toBe(t);
    expect(firstFireAt(hourly, t, null)).toBe(t + 3_600_000);
    expect(firstFireAt(hourly, t, t + 1)).toBe(t + 3_600_000);
  });
});

describe('dueFires (catch-up policies, SPEC §10)', () => {
  const minute = 60_000;
  it("'all' fires every elapsed boundary up to 64, then the next boundary is the first after now", async () => {
    const cron = await parseScheduleSpec('* * * * *');
    const every = await parseScheduleSpec('@every 1m');
    const t0 = Date.UTC(2026, 0, 1);
    for (const spec of [cron, every]) {
      expect(dueFires(spec, t0, t0 + 10 * minute + 5, 'all')).toEqual({ count: 11, nextFireAt: t0 + 11 * minute });
      expect(dueFires(spec, t0, t0 + 1_000 * minute, 'all')).toEqual({ count: 64, nextFireAt: t0 + 1_001 * minute });
      expect(dueFires(spec, t0, t0 - 1, 'all')).toEqual({ count: 0, nextFireAt: t0 });
    }
  });

  it("'latest' fires once; 'none' fires once only within the grace; paused never fires; all skip forward past now", async () => {
    const cron = await parseScheduleSpec('*/10 * * * * *');
    const t0 = Date.UTC(2026, 0, 1);
    const now = t0 + 3_600_000 + 5_000;
    expect(dueFires(cron, t0, now, 'latest')).toEqual({ count: 1, nextFireAt: t0 + 3_610_000 });
    expect(dueFires(cron, t0, now, 'none')).toEqual({ count: 0, nextFireAt: t0 + 3_610_000 });
    expect(dueFires(cron, t0, t0 + CATCH_UP_GRACE_MS, 'none')).toEqual({
      count: 1,
      nextFireAt: t0 + CATCH_UP_GRACE_MS + 10_000,
    });
    expect(dueFires(cron, t0, now, 'all', true)).toEqual({ count: 0, nextFireAt: t0 + 3_610_000 });
  });

  it('names the boundary of each fire: the elapsed ones for all, the latest elapsed one for latest and none', async () => {
    const cron = await parseScheduleSpec('* * * * *');
    const every = await parseScheduleSpec('@every 1m');
    const t0 = Date.UTC(2026, 0, 1);
    for (const spec of [cron, every]) {
      expect(dueFireBoundaries(spec, t0, t0 + 3 * minute + 5, 'all')).toEqual({
        boundaries: [t0, t0 + minute, t0 + 2 * minute, t0 + 3 * minute],
        nextFireAt: t0 + 4 * minute,
      });
      // 30 days of missed minutes (43 200 boundaries): the latest is found without stepping through them.
      expect(dueFireBoundaries(spec, t0, t0 + 43_200 * minute + 5, 'latest')).toEqual({
        boundaries: [t0 + 43_200 * minute],
        nextFireAt: t0 + 43_201 * minute,
      });
      expect(dueFireBoundaries(spec, t0, t0 + 30_005, 'none')).toEqual({ boundaries: [t0], nextFireAt: t0 + minute });
      expect(dueFireBoundaries(spec, t0, t0 + 10 * minute, 'latest', true)).toEqual({
        boundaries: [],
        nextFireAt: t0 + 11 * minute,
      });
    }
    // In a zone across a DST change: Berlin's 02:30 does not exist on 2026-03-29; 03:30 local is 01:30 UTC.
    const berlin = await parseScheduleSpec('30 * * * *', 'Europe/Berlin');
    const nightStart = Date.UTC(2026, 2, 28, 20, 30);
    expect(dueFireBoundaries(berlin, nightStart, Date.UTC(2026, 2, 29, 1, 45), 'latest').boundaries).toEqual([
      Date.UTC(2026, 2, 29, 1, 30),
    ]);
  });

  it('a schedule with no boundary left waits at NEVER_MS', async () => {
    const leap = await parseScheduleSpec('0 0 29 2 *');
    expect(dueFires(leap, Date.UTC(9996, 1, 29), Date.UTC(9999, 5, 1), 'all')).toEqual({
      count: 1,
      nextFireAt: NEVER_MS,
    });
  });
});

describe('croner is optional', () => {
  it('@every schedules are stored and fired without croner; a cron spec then names the package to install', async () => {
    const run = promisify(execFile);
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', '--import', './test/unit/fixtures/hide-croner.mjs', 'test/unit/fixtures/without-croner.ts'],
      {
        cwd: ROOT,
        timeout: 60_000,
      },
    );
    const out = JSON.parse(stdout.trim().split('\n').pop()!) as {
      every: number;
      fired: number;
      cron: { name: string; message: string };
    };
    expect(out.every).toBe(1_000);
    expect(out.fired).toBeGreaterThanOrEqual(1);
    expect(out.cron.name).toBe('MissingPeer');
    expect(out.cron.message).toContain('npm install croner');
  }, 90_000);
});
