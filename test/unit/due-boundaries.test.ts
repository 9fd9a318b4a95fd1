import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { SCHEDULE_CATCH_UP_CAP, dueBoundaries } from '../../lib/contract/schedule-spec.js';

describe('dueBoundaries (schedule catch-up arithmetic)', () => {
  it('caps catch-up at 64 boundaries', () => {
    expect(SCHEDULE_CATCH_UP_CAP).toBe(64);
  });

  it('fires nothing before the next boundary', () => {
    expect(dueBoundaries(1_000, 100, 999)).toEqual({ fires: [], nextFireAt: 1_000 });
  });

  it('fires a boundary that is exactly now and moves one interval on', () => {
    expect(dueBoundaries(1_000, 100, 1_000)).toEqual({ fires: [1_000], nextFireAt: 1_100 });
  });

  it('fires every elapsed boundary and lands strictly after now', () => {
    expect(dueBoundaries(1_000, 100, 1_250)).toEqual({ fires: [1_000, 1_100, 1_200], nextFireAt: 1_300 });
    expect(dueBoundaries(1_000, 100, 1_300)).toEqual({ fires: [1_000, 1_100, 1_200, 1_300], nextFireAt: 1_400 });
  });

  it('fires exactly 64 when exactly 64 boundaries elapsed', () => {
    const r = dueBoundaries(0, 1_000, 63_000);
    expect(r.fires).toHaveLength(64);
    expect(r.nextFireAt).toBe(64_000);
  });

  it('enqueues 64 and skips forward past now when more elapsed', () => {
    const interval = 1_000;
    const start = 5_000;
    const now = start + 1_000 * interval + 250;
    const r = dueBoundaries(start, interval, now);
    expect(r.fires).toHaveLength(64);
    expect(r.nextFireAt).toBeGreaterThan(now);
    expect(r.nextFireAt - now).toBeLessThanOrEqual(interval);
    expect((r.nextFireAt - start) % interval).toBe(0);
    for (const f of r.fires) {
      expect(f).toBeLessThanOrEqual(now);
      expect((f - start) % interval).toBe(0);
    }
    expect(new Set(r.fires).size).toBe(64);
  });

  it('holds for any next fire, interval and now (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 1, max: 86_400_000 }),
        fc.integer({ min: -(2 ** 36), max: 2 ** 36 }),
        (nextFireAt, intervalMs, delta) => {
          const now = nextFireAt + delta;
          const r = dueBoundaries(nextFireAt, intervalMs, now);
          if (now < nextFireAt) {
            expect(r).toEqual({ fires: [], nextFireAt });
            return;
          }
          const elapsed = Math.floor((now - nextFireAt) / intervalMs) + 1;
          expect(r.fires).toHaveLength(Math.min(elapsed, 64));
          expect(r.nextFireAt).toBeGreaterThan(now);
          expect(r.nextFireAt - now).toBeLessThanOrEqual(intervalMs);
          expect((r.nextFireAt - nextFireAt) % intervalMs).toBe(0);
          r.fires.forEach((f, i) => {
            expect(f).toBeGreaterThanOrEqual(nextFireAt);
            expect(f).toBeLessThanOrEqual(now);
            expect((f - nextFireAt) % intervalMs).toBe(0);
            if (i > 0) expect(f - r.fires[i - 1]!).toBe(intervalMs);
          });
        },
      ),
      { numRuns: 500 },
    );
  });
});
