import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { LeadershipLost } from '../../lib/contract/errors.js';
import { SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../../lib/contract/names.js';
import type { Lock } from '../../lib/contract/types.js';
import {
  SCHEDULER_LOCK_TTL_MS,
  SCHEDULER_RENEW_MS,
  type SchedulerEngine,
  runSchedules,
} from '../../lib/internal/scheduler-runner.js';
import { WakeHub } from '../../lib/internal/wake-hub.js';

/**
 * An in-memory SchedulerEngine: the runner is engine-agnostic, so its
 * leadership discipline is pinned here once, without a database. Time is
 * moved forward through a performance.now spy (the runner times its renewals on the
 * monotonic clock) so a 20 s renew cadence takes no time.
 */
class FakeEngine implements SchedulerEngine {
  readonly hub = new WakeHub();
  lockCalls: { name: string; owner: string; ttlMs: number }[] = [];
  renewCalls: number[] = [];
  releases = 0;
  fires = 0;
  /** Called on every fireDue (lets a test move the clock). */
  onFire: (n: number) => void = () => undefined;

  constructor(
    private readonly grant: boolean,
    private readonly renewResult: boolean,
  ) {}

  async tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null> {
    this.lockCalls.push({ name, owner, ttlMs });
    if (!this.grant) return null;
    return {
      name,
      owner,
      expiresAt: Date.now() + ttlMs,
      renew: async (t: number) => {
        this.renewCalls.push(t);
        return this.renewResult;
      },
      release: async () => {
        this.releases += 1;
        return true;
      },
    };
  }

  listen(channel: string) {
    return this.hub.listen(channel);
  }

  async fireDue(): Promise<{ now: number; nextFireAt: number | null }> {
    this.fires += 1;
    this.onFire(this.fires);
    return { now: Date.now(), nextFireAt: Date.now() + 5 };
  }
}

function shiftClock(): { jump(ms: number): void } {
  const real = performance.now.bind(performance);
  let offset = 0;
  jest.spyOn(performance, 'now').mockImplementation(() => real() + offset);
  return {
    jump(ms: number) {
      offset += ms;
    },
  };
}

async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

afterEach(() => {
  jest.restoreAllMocks();
});

describe('runSchedules (engine-agnostic runner)', () => {
  it('takes the leadership lock __alkstore_scheduler with a 60 s ttl and renews every 20 s', () => {
    expect(SCHEDULER_LOCK_TTL_MS).toBe(60_000);
    expect(SCHEDULER_RENEW_MS).toBe(20_000);
  });

  it('rejects with LeadershipLost naming the owner when a renew fails, and stops ticking', async () => {
    const clock = shiftClock();
    const engine = new FakeEngine(true, false);
    engine.onFire = (n) => {
      if (n === 3) clock.jump(SCHEDULER_RENEW_MS + 1_000);
    };
    const ac = new AbortController();
    let caught: unknown;
    try {
      await within(10_000, runSchedules(engine, ac.signal, { owner: 'runner-a', maxTickMs: 20 }));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(LeadershipLost);
    expect((caught as LeadershipLost).code).toBe('LEADERSHIP_LOST');
    expect((caught as LeadershipLost).message).toContain('runner-a');
    expect(engine.lockCalls[0]).toEqual({ name: SCHEDULER_LOCK, owner: 'runner-a', ttlMs: SCHEDULER_LOCK_TTL_MS });
    expect(engine.renewCalls).toEqual([SCHEDULER_LOCK_TTL_MS]);
    const firesAtLoss = engine.fires;
    expect(firesAtLoss).toBe(3);
    await new Promise((r) => setTimeout(r, 50));
    expect(engine.fires).toBe(firesAtLoss);
    // The runner's wake receiver is closed.
    expect(engine.hub.hasListeners(SCHEDULES_WAKE_CHANNEL)).toBe(false);
    ac.abort();
  });

  it('keeps ticking after a successful renew and resolves on abort, releasing the lock', async () => {
    const clock = shiftClock();
    const engine = new FakeEngine(true, true);
    const ac = new AbortController();
    engine.onFire = (n) => {
      if (n === 2) clock.jump(SCHEDULER_RENEW_MS + 1_000);
      if (n === 6) ac.abort();
    };
    await within(10_000, runSchedules(engine, ac.signal, { owner: 'runner-b', maxTickMs: 20 }));
    expect(engine.renewCalls.length).toBeGreaterThanOrEqual(1);
    expect(engine.fires).toBeGreaterThanOrEqual(6);
    expect(engine.releases).toBe(1);
    expect(engine.hub.hasListeners(SCHEDULES_WAKE_CHANNEL)).toBe(false);
  });

  it('never fires without the lock, keeps trying, and resolves on abort', async () => {
    const engine = new FakeEngine(false, true);
    const ac = new AbortController();
    const run = runSchedules(engine, ac.signal, { owner: 'runner-c', maxTickMs: 10 });
    const deadline = Date.now() + 10_000;
    while (engine.lockCalls.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(engine.lockCalls.length).toBeGreaterThanOrEqual(3);
    ac.abort();
    await within(10_000, run);
    expect(engine.fires).toBe(0);
    expect(engine.releases).toBe(0);
  });

  it('resolves at once for an already-aborted signal', async () => {
    const engine = new FakeEngine(true, true);
    await within(5_000, runSchedules(engine, AbortSignal.abort(), { owner: 'runner-d' }));
    expect(engine.fires).toBe(0);
  });

  it('a wake on the schedules channel cuts the wait short', async () => {
    const engine = new FakeEngine(true, true);
    const ac = new AbortController();
    // Far next fire and a long max tick: without the wake the second fireDue would come after 60 s.
    engine.fireDue = async () => {
      engine.fires += 1;
      return { now: Date.now(), nextFireAt: Date.now() + 600_000 };
    };
    const run = runSchedules(engine, ac.signal, { owner: 'runner-e', maxTickMs: 60_000 });
    const deadline = Date.now() + 10_000;
    while (engine.fires < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    engine.hub.wake(SCHEDULES_WAKE_CHANNEL);
    while (engine.fires < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(engine.fires).toBeGreaterThanOrEqual(2);
    ac.abort();
    await within(10_000, run);
  });
});
