import { describe, expect, it } from '@jest/globals';
import { MAX_BACKOFF_MS, backoffCapMs, backoffDelayMs, backoffRangeMs } from '../../lib/contract/backoff.js';
import { expectInvalidArgument, thrown } from '../helpers/typed-errors.js';
import { type BackoffVectors, loadVectors } from './vectors.js';

const v = loadVectors<BackoffVectors>('backoff.json');

describe('backoff (equal-jitter exponential, conformance/contract/backoff.json)', () => {
  it('caps at one hour', () => {
    expect(MAX_BACKOFF_MS).toBe(v.maxBackoffMs);
  });

  it.each(v.delays.map((d) => [`attempts=${d.attempts} base=${d.baseMs} random=${d.random}`, d] as const))(
    'gives the exact delay for %s',
    (_label, d) => {
      expect(backoffCapMs(d.attempts, d.baseMs)).toBe(d.capMs);
      expect(backoffDelayMs(d.attempts, d.baseMs, () => d.random)).toBe(d.delayMs);
    },
  );

  it.each(v.ranges.map((r) => [`attempts=${r.attempts} base=${r.baseMs}`, r] as const))(
    'pins the range for %s',
    (_label, r) => {
      expect(backoffRangeMs(r.attempts, r.baseMs)).toEqual({ min: r.minMs, max: r.maxMs });
    },
  );

  it('keeps every delay inside its range for any random in [0, 1)', () => {
    for (const r of v.ranges) {
      for (const random of [0, 1e-9, 0.25, 0.5, 0.75, 0.9999999, 1 - Number.EPSILON]) {
        const d = backoffDelayMs(r.attempts, r.baseMs, () => random);
        expect(d).toBeGreaterThanOrEqual(r.minMs);
        expect(d).toBeLessThanOrEqual(r.maxMs);
        expect(Number.isInteger(d)).toBe(true);
      }
    }
  });

  it('never decreases as attempts grow (same random)', () => {
    for (const base of [1000, 5000]) {
      let prev = 0;
      for (let attempts = 1; attempts <= 30; attempts++) {
        const d = backoffDelayMs(attempts, base, () => 0.5);
        expect(d).toBeGreaterThanOrEqual(prev);
        prev = d;
      }
    }
  });

  it('uses Math.random by default and stays in range', () => {
    for (let i = 0; i < 200; i++) {
      const d = backoffDelayMs(3, 5000);
      expect(d).toBeGreaterThanOrEqual(10_000);
      expect(d).toBeLessThanOrEqual(20_000);
    }
  });

  it.each(v.invalid.map((x) => [`attempts=${x.attempts} base=${x.baseMs}`, x] as const))(
    'refuses %s with an InvalidArgument naming the argument',
    (_label, x) => {
      expectInvalidArgument(
        thrown(() => backoffCapMs(x.attempts, x.baseMs)),
        x.argument,
      );
      expectInvalidArgument(
        thrown(() => backoffDelayMs(x.attempts, x.baseMs, () => 0)),
        x.argument,
      );
      expectInvalidArgument(
        thrown(() => backoffRangeMs(x.attempts, x.baseMs)),
        x.argument,
      );
    },
  );

  it('refuses non-finite and non-number inputs with an InvalidArgument naming the argument', () => {
    expectInvalidArgument(
      thrown(() => backoffCapMs(Number.NaN, 5000)),
      'attempts',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => backoffCapMs(1, Number.NaN)),
      'baseMs',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => backoffCapMs(1, Number.POSITIVE_INFINITY)),
      'baseMs',
    );
    expectInvalidArgument(
      thrown(() => backoffCapMs(Number.POSITIVE_INFINITY, 5000)),
      'attempts',
    );
    expectInvalidArgument(
      thrown(() => backoffCapMs('2' as never, 5000)),
      'attempts',
      ['string'],
    );
    expectInvalidArgument(
      thrown(() => backoffCapMs(1, null as never)),
      'baseMs',
      ['null'],
    );
  });

  it.each(v.invalidRandom)('refuses a random source returning %p with an InvalidArgument naming random', (r) => {
    expectInvalidArgument(
      thrown(() => backoffDelayMs(1, 5000, () => r)),
      'random',
      ['[0, 1)', String(r)],
    );
  });

  it('refuses a random source returning NaN or a string, and one that is not a function', () => {
    expectInvalidArgument(
      thrown(() => backoffDelayMs(1, 5000, () => Number.NaN)),
      'random',
      ['NaN'],
    );
    // The message shows the type of a non-number draw, never the value.
    const e = expectInvalidArgument(
      thrown(() => backoffDelayMs(1, 5000, () => 'secret-ish' as never)),
      'random',
      ['string'],
    );
    expect(e.message).not.toContain('secret-ish');
    expectInvalidArgument(
      thrown(() => backoffDelayMs(1, 5000, 5 as never)),
      'random',
      ['function'],
    );
  });
});
