import { describe, expect, it } from '@jest/globals';
import { mayReadSignal } from '../../lib/worker/signal-use.js';

// Which handlers the worker core gives an AbortSignal of their own (lib/worker/signal-use.ts).

class Handlers {
  async one(job: unknown): Promise<unknown> {
    return job;
  }
  async two(job: unknown, signal: AbortSignal): Promise<unknown> {
    return [job, signal];
  }
  async *generator(job: unknown): AsyncGenerator<unknown> {
    yield job;
  }
  ['odd(name'](job: unknown): unknown {
    return job;
  }
}
const h = new Handlers();

describe('mayReadSignal', () => {
  it('is false for handlers that declare at most one plain parameter and never name arguments or eval', () => {
    const cannot: unknown[] = [
      async () => undefined,
      (job: unknown) => job,
      async (job: unknown) => job,
      ({ payload }: { payload: unknown }) => payload,
      async function named(job: unknown) {
        return job;
      },
      h.one,
      h.generator,
    ];
    for (const fn of cannot) expect([String(fn), mayReadSignal(fn)]).toEqual([String(fn), false]);
  });

  it('is true for a second parameter, rest or default parameters, arguments, eval, sloppy, bound, native or proxied functions', () => {
    const may: unknown[] = [
      async (job: unknown, signal: AbortSignal) => [job, signal],
      (...args: unknown[]) => args,
      (job: unknown, ...rest: unknown[]) => [job, rest],
      (job: unknown, signal: unknown = null) => [job, signal],
      ({ payload = 1 }: { payload?: unknown }) => payload,
      function (job: unknown) {
        // eslint-disable-next-line prefer-rest-params
        return [job, arguments];
      },
      (_job: unknown) => eval('_job') as unknown,
      new Function('job', 'return job'),
      ((job: unknown) => job).bind(null),
      new Proxy(async (job: unknown) => job, {}),
      Math.max,
      h.two,
      h['odd(name'],
      class Handler {},
      'not a function',
    ];
    for (const fn of may) expect([String(fn), mayReadSignal(fn)]).toEqual([String(fn), true]);
  });
});
