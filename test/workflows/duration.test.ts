import { describe, expect, it } from '@jest/globals';
import { InvalidArgument } from '../../lib/contract/errors.js';
import { durationMs } from '../../lib/workflows/index.js';

describe('workflow durations', () => {
  it('reads milliseconds and "<number> <unit>" text, rounding a fraction of a millisecond up', () => {
    expect(durationMs('d', 250)).toBe(250);
    expect(durationMs('d', '3 days')).toBe(3 * 86_400_000);
    expect(durationMs('d', '90s')).toBe(90_000);
    expect(durationMs('d', '1.5 hours')).toBe(5_400_000);
    expect(durationMs('d', '2 Weeks')).toBe(2 * 604_800_000);
    expect(durationMs('d', '0.0001 s')).toBe(1);
    expect(durationMs('d', '0 ms', { allowZero: true })).toBe(0);
  });

  it('refuses anything else with InvalidArgument naming the argument', () => {
    for (const bad of ['3 fortnights', 'soon', '', '-1 s', Number.NaN, -5, null, {}])
      expect(() => durationMs('duration', bad)).toThrow(InvalidArgument);
    expect(() => durationMs('duration', 'soon')).toThrow(/^duration must be/);
  });
});
