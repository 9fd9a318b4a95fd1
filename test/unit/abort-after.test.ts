import { getEventListeners } from 'node:events';
import { describe, expect, it } from '@jest/globals';
import { abortAfter } from '../../lib/internal/sleep.js';

/** The entries a signal keeps of the signals `AbortSignal.any` made from it (Node's internal set of dependants). */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  const set = key === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown> | undefined>)[key];
  return set?.size ?? 0;
}

/**
 * `abortAfter` is how the long-running loops (the scheduler runner, stream subscriptions, the cancel
 * watch) wait for a wake, a stop or a timeout, once per poll: the long-lived stop signal must hold
 * nothing of the polls it outlived.
 */
describe('abortAfter', () => {
  it('a long-lived signal combined 10 000 times holds no listener and no reference to the composites', () => {
    const stop = new AbortController();
    for (let i = 0; i < 10_000; i++) {
      const timed = abortAfter(60_000, stop.signal);
      timed.clear();
    }
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    expect(dependants(stop.signal)).toBe(0);
  });

  it('aborts when its timer fires, and not after clear()', async () => {
    const stop = new AbortController();
    const fires = abortAfter(5, stop.signal);
    await new Promise<void>((resolve) => fires.signal.addEventListener('abort', () => resolve(), { once: true }));
    expect(fires.signal.aborted).toBe(true);
    fires.clear();
    const cleared = abortAfter(5, stop.signal);
    cleared.clear();
    stop.abort(new Error('stopped'));
    expect(cleared.signal.aborted).toBe(false);
  });

  it('aborts with the reason of the source that aborts first, at once when one already has', () => {
    const a = new AbortController();
    const b = new AbortController();
    const timed = abortAfter(null, a.signal, b.signal);
    const reason = new Error('b first');
    b.abort(reason);
    a.abort(new Error('a later'));
    expect(timed.signal.reason).toBe(reason);
    timed.clear();
    expect(getEventListeners(a.signal, 'abort')).toHaveLength(0);
    const already = abortAfter(60_000, b.signal);
    expect(already.signal.reason).toBe(reason);
    already.clear();
  });
});
