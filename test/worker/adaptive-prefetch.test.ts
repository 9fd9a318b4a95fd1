import { describe, expect, it } from '@jest/globals';
import { AdaptivePrefetch } from '../../lib/worker/adaptive-prefetch.js';
import { expectInvalidArgument, expectInvalidOption, thrown } from '../helpers/typed-errors.js';

describe('AdaptivePrefetch (pure sizing rules)', () => {
  it('refuses a bad concurrency, max or lease share with an InvalidArgument naming the option', () => {
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 0, max: 10 })),
      'concurrency',
      ['[1, '],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1.5, max: 10 })),
      'concurrency',
      ['fraction'],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: '4' as never, max: 10 })),
      'concurrency',
      ['string'],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1, max: -1 })),
      'max',
      ['[0, '],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1, max: Number.NaN })),
      'max',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1, max: 10, leaseShare: 0.9 })),
      'leaseShare',
      ['(0, 0.5]', '0.9'],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1, max: 10, leaseShare: 0 })),
      'leaseShare',
      ['(0, 0.5]'],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1, max: 10, leaseShare: Number.NaN })),
      'leaseShare',
      ['NaN'],
    );
    expectInvalidArgument(
      thrown(() => new AdaptivePrefetch({ concurrency: 1, max: 10, leaseShare: '0.2' as never })),
      'leaseShare',
      ['string'],
    );
    expectInvalidOption(
      thrown(() => new AdaptivePrefetch(null as never)),
      'AdaptivePrefetch options',
      ['object'],
    );
  });

  it('accepts the bounds: concurrency 1, max 0, leaseShare 0.5', () => {
    const p = new AdaptivePrefetch({ concurrency: 1, max: 0, leaseShare: 0.5 });
    expect(p.current).toBe(0);
    expect(p.bound()).toBe(0);
  });

  it('starts with no buffer and allows only `concurrency` before a handler has been measured', () => {
    const p = new AdaptivePrefetch({ concurrency: 4, max: 500 });
    expect(p.current).toBe(0);
    expect(p.bound()).toBe(4);
    expect(p.claimed(4, 4, 5, 60_000, true)).toBe(4);
  });

  it('doubles after full claims that found the slots idle, up to max', () => {
    const p = new AdaptivePrefetch({ concurrency: 10, max: 500 });
    p.handled(0.01);
    const sizes: number[] = [];
    for (let i = 0; i < 8; i++) sizes.push(p.claimed(10 + p.current, 10 + p.current, 5, 60_000, true));
    expect(sizes).toEqual([10, 20, 40, 80, 160, 320, 500, 500]);
  });

  it('keeps its size after a full claim that found the handlers busy, and halves after a short claim', () => {
    const p = new AdaptivePrefetch({ concurrency: 10, max: 500 });
    p.handled(0.01);
    for (let i = 0; i < 4; i++) p.claimed(10, 10, 5, 60_000, true);
    expect(p.current).toBe(80);
    expect(p.claimed(50, 50, 5, 60_000, false)).toBe(80);
    expect(p.claimed(50, 12, 5, 60_000, true)).toBe(40);
    expect(p.claimed(50, 0, 5, 60_000, true)).toBe(20);
  });

  it('never plans a buffer the handlers cannot start within a quarter of the lease, counted from the claim', () => {
    // 2 slots at 10 ms: 0.2 jobs/ms. 200 ms claims would justify 80 jobs; a 1.6 s lease leaves 400 - 200 ms: 40.
    const p = new AdaptivePrefetch({ concurrency: 2, max: 500 });
    p.handled(10);
    const sizes: number[] = [];
    for (let i = 0; i < 8; i++) sizes.push(p.claimed(2 + p.current, 2 + p.current, 200, 1_600, true));
    expect(sizes).toEqual([2, 4, 8, 16, 32, 40, 40, 40]);
    expect(p.bound()).toBe(40);
    // The handlers slow down to 100 ms: the buffer shrinks with the measurements, before the next claim.
    for (let i = 0; i < 60; i++) p.handled(100);
    expect(p.current).toBeLessThanOrEqual(Math.floor((2 / 90) * 200));
    // A claim slower than a quarter of the lease leaves no room for a buffer at all.
    expect(p.claimed(10, 10, 2_000, 1_600, true)).toBe(0);
  });

  it('keeps about one claim round trip of work for long handlers', () => {
    // 10 slots at 100 ms: 0.1 jobs/ms; a 5 ms claim needs about one job buffered, not ten.
    const p = new AdaptivePrefetch({ concurrency: 10, max: 500 });
    p.handled(100);
    for (let i = 0; i < 10; i++) p.claimed(1 + p.current, 1 + p.current, 5, 60_000, true);
    expect(p.current).toBe(1);
  });

  it('drops the buffer when buffered jobs had to be released at half their lease', () => {
    const p = new AdaptivePrefetch({ concurrency: 10, max: 500 });
    p.handled(0.01);
    p.claimed(10, 10, 5, 60_000, true);
    expect(p.current).toBe(10);
    p.overran();
    expect(p.current).toBe(0);
  });
});
