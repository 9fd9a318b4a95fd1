import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { InvalidOption } from '../../lib/contract/errors.js';
import { DEFAULT_RETRY_SETTINGS, RetryPolicy, type RetrySettings } from '../../lib/outbox/index.js';
import { expectInvalidArgument, expectInvalidOption, thrown } from '../helpers/typed-errors.js';

const settings = (over: Partial<RetrySettings> = {}): RetrySettings => ({
  baseMs: 1_000,
  maxDelayMs: 60_000,
  maxAttempts: 6,
  jitter: 0.2,
  ...over,
});

describe('RetryPolicy', () => {
  it('dead-letters a permanent failure at once, whatever the attempt', () => {
    const p = new RetryPolicy(settings());
    expect(p.decide(1, 'permanent')).toEqual({ kind: 'dead', reason: 'permanent' });
  });

  it('retries transient failures and timeouts with a doubling delay (no jitter)', () => {
    const p = new RetryPolicy(settings({ jitter: 0 }));
    expect(p.decide(1, 'transient')).toEqual({ kind: 'retry', delayMs: 1_000 });
    expect(p.decide(2, 'timeout')).toEqual({ kind: 'retry', delayMs: 2_000 });
    expect(p.decide(3, 'transient')).toEqual({ kind: 'retry', delayMs: 4_000 });
    expect(p.decide(5, 'transient')).toEqual({ kind: 'retry', delayMs: 16_000 });
  });

  it('dead-letters as exhausted once attempts reach maxAttempts', () => {
    const p = new RetryPolicy(settings({ maxAttempts: 3 }));
    expect(p.decide(2, 'transient').kind).toBe('retry');
    expect(p.decide(3, 'transient')).toEqual({ kind: 'dead', reason: 'exhausted' });
    expect(p.decide(4, 'timeout')).toEqual({ kind: 'dead', reason: 'exhausted' });
  });

  it("lets the message's own lower maxAttempts win", () => {
    const p = new RetryPolicy(settings({ maxAttempts: 10 }));
    expect(p.decide(3, 'transient', 3)).toEqual({ kind: 'dead', reason: 'exhausted' });
    expect(p.decide(3, 'transient', 20).kind).toBe('retry');
  });

  it('caps every delay at maxDelayMs, even for huge attempt counts', () => {
    const p = new RetryPolicy(settings({ jitter: 0, maxAttempts: 10_000 }));
    expect(p.delayMs(7)).toBe(60_000);
    expect(p.delayMs(5_000)).toBe(60_000);
  });

  it('applies jitter by shortening the delay: random 0 gives the full delay, random near 1 the shortest', () => {
    expect(new RetryPolicy(settings({ jitter: 0.5 }), () => 0).delayMs(2)).toBe(2_000);
    expect(new RetryPolicy(settings({ jitter: 0.5 }), () => 0.5).delayMs(2)).toBe(1_500);
    expect(new RetryPolicy(settings({ jitter: 0.5 }), () => 0.999999).delayMs(2)).toBe(1_000);
  });

  it('keeps every delay within (exp * (1 - jitter), exp] and below maxDelayMs (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.double({ min: 0, max: 0.99, noNaN: true }),
        fc.integer({ min: 1, max: 80 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (baseMs, extra, jitter, attempts, r) => {
          const maxDelayMs = baseMs + extra;
          const p = new RetryPolicy({ baseMs, maxDelayMs, maxAttempts: 100, jitter }, () => r);
          const exp = Math.min(baseMs * 2 ** (attempts - 1), maxDelayMs);
          const d = p.delayMs(attempts);
          expect(Number.isInteger(d)).toBe(true);
          expect(d).toBeLessThanOrEqual(maxDelayMs);
          expect(d).toBeLessThanOrEqual(exp);
          expect(d).toBeGreaterThanOrEqual(Math.floor(exp * (1 - jitter)));
        },
      ),
    );
  });

  it('is pure: the same inputs and random source give the same answer', () => {
    const a = new RetryPolicy(settings(), () => 0.3);
    const b = new RetryPolicy(settings(), () => 0.3);
    for (let n = 1; n < 6; n++) expect(a.decide(n, 'transient')).toEqual(b.decide(n, 'transient'));
  });

  it('refuses a bad attempt count, failure kind or maxAttempts with an InvalidArgument naming it', () => {
    const p = new RetryPolicy();
    expectInvalidArgument(
      thrown(() => p.decide(0, 'transient')),
      'attempts',
      ['[1, 9007199254740991]'],
    );
    expectInvalidArgument(
      thrown(() => p.decide(1.5, 'timeout')),
      'attempts',
      ['fraction'],
    );
    expectInvalidArgument(
      thrown(() => p.decide(Number.NaN, 'timeout')),
      'attempts',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => p.delayMs(-1)),
      'attempts',
      ['[1, 9007199254740991]'],
    );
    expectInvalidArgument(
      thrown(() => p.decide(1, 'fatal' as never)),
      'failure',
      ['transient, permanent, timeout', 'another string'],
    );
    // A NaN cap used to make `attempts >= cap` false forever: retried without end.
    expectInvalidArgument(
      thrown(() => p.decide(9, 'transient', Number.NaN)),
      'maxAttempts',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => p.decide(1, 'transient', 0)),
      'maxAttempts',
      ['[1, 2147483647]'],
    );
  });

  it('refuses a random source outside [0, 1), or one that is not a function, with an InvalidArgument naming random', () => {
    expectInvalidArgument(
      thrown(() => new RetryPolicy(settings(), () => 1).delayMs(1)),
      'random',
      ['[0, 1)', '1'],
    );
    expectInvalidArgument(
      thrown(() => new RetryPolicy(settings(), () => Number.NaN).decide(1, 'transient')),
      'random',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => new RetryPolicy(settings(), 0.5 as never)),
      'random',
      ['function'],
    );
  });

  it('validates its settings with InvalidOption naming the field', () => {
    expect(() => new RetryPolicy(settings({ jitter: 1 }))).toThrow(InvalidOption);
    expect(() => new RetryPolicy(settings({ jitter: 1 }))).toThrow(/retry\.jitter/);
    expect(() => new RetryPolicy(settings({ baseMs: 0 }))).toThrow(/retry\.baseMs/);
    expect(() => new RetryPolicy(settings({ baseMs: 5_000, maxDelayMs: 4_000 }))).toThrow(
      /retry\.baseMs must not exceed retry\.maxDelayMs/,
    );
    expect(() => new RetryPolicy(settings({ maxAttempts: 2.5 }))).toThrow(/retry\.maxAttempts/);
    expectInvalidOption(
      thrown(() => new RetryPolicy(null as never)),
      'retry',
      ['object'],
    );
  });

  it('has defaults that validate', () => {
    expect(new RetryPolicy().settings).toEqual(DEFAULT_RETRY_SETTINGS);
  });
});
