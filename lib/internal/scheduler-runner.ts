import { LeadershipLost } from '../contract/errors.js';
import { SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../contract/names.js';
import type { Lock, RunSchedulesOpts, WakeReceiver } from '../contract/types.js';
import { requireInt, requireTimerMs, runSchedulesInput } from '../contract/validate.js';
import { performance } from 'node:perf_hooks';
import { abortAfter } from './sleep.js';

/** Leadership lock TTL and renew cadence by default (SPEC §7); `lockTtlMs` / `renewIntervalMs` change them. */
export const SCHEDULER_LOCK_TTL_MS = 60_000;
export const SCHEDULER_RENEW_MS = 20_000;
/** Shortest lock TTL a runner accepts: a renew must fit in half of it, round trips included. */
export const SCHEDULER_MIN_LOCK_TTL_MS = 1_000;

/** What the runner needs from an engine. */
export interface SchedulerEngine {
  tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null>;
  listen(channel: string): WakeReceiver;
  /**
   * Atomically, against the database clock: for every schedule whose next
   * fire is due, enqueue its boundaries (as its catch-up policy allows) and
   * advance its next fire. Resolves to the earliest next fire of any schedule
   * in epoch ms and the database's now, or null when there are none.
   */
  fireDue(): Promise<{ now: number; nextFireAt: number | null }>;
  /** Wakes every runner's schedules receiver (after a release, so a standby takes over at once). */
  wake?(): Promise<void>;
}

/** The runner's lock timings, validated before any I/O (`InvalidArgument` naming the option and its bounds). */
export function runnerTimings(opts: Pick<RunSchedulesOpts, 'lockTtlMs' | 'renewIntervalMs'>): {
  lockTtlMs: number;
  renewIntervalMs: number;
} {
  const lockTtlMs =
    opts.lockTtlMs === undefined
      ? SCHEDULER_LOCK_TTL_MS
      : requireTimerMs('lockTtlMs', opts.lockTtlMs, SCHEDULER_MIN_LOCK_TTL_MS);
  const renewIntervalMs =
    opts.renewIntervalMs === undefined
      ? Math.min(SCHEDULER_RENEW_MS, Math.floor(lockTtlMs / 3))
      : requireInt('renewIntervalMs', opts.renewIntervalMs, 1, Math.floor(lockTtlMs / 2));
  return { lockTtlMs, renewIntervalMs };
}

/**
 * Engine-agnostic `runSchedules`: leader election, ticking, renewals,
 * leadership loss. A runner that stops releases the lock and wakes the
 * standbys, so another replica leads within a round trip (SPEC §10); after a
 * crash the lock lapses after `lockTtlMs`.
 */
export async function runSchedules(
  engine: SchedulerEngine,
  signal: AbortSignal,
  opts?: RunSchedulesOpts,
): Promise<void> {
  const input = runSchedulesInput(signal, opts);
  const { lockTtlMs, renewIntervalMs } = runnerTimings(opts ?? {});
  const owner = input.owner ?? `runner-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const maxTickMs = input.maxTickMs;
  const wakes = engine.listen(SCHEDULES_WAKE_CHANNEL);
  const waitWake = async (ms: number): Promise<void> => {
    if (ms <= 0) return;
    const timed = abortAfter(ms, signal);
    await wakes.recv(timed.signal).finally(timed.clear);
  };
  let lock: Lock | null = null;
  try {
    while (!signal.aborted) {
      if (!lock) {
        lock = await engine.tryLock(SCHEDULER_LOCK, owner, lockTtlMs);
        if (!lock) {
          // Someone else leads; try again on a wake (a leader that stops sends one) or after a tick.
          await waitWake(Math.min(maxTickMs, renewIntervalMs));
          continue;
        }
      }
      // Local intervals on the monotonic clock: a wall-clock jump never delays a renewal.
      let renewAt = performance.now() + renewIntervalMs;
      while (!signal.aborted) {
        if (performance.now() >= renewAt) {
          // The next renewal is due an interval after this one was sent.
          const sent = performance.now();
          if (!(await lock.renew(lockTtlMs))) throw new LeadershipLost(owner);
          renewAt = sent + renewIntervalMs;
        }
        const { now, nextFireAt } = await engine.fireDue();
        const untilDue = nextFireAt === null ? maxTickMs : Math.max(0, nextFireAt - now);
        await waitWake(Math.min(untilDue, maxTickMs, Math.max(0, renewAt - performance.now())));
      }
    }
  } finally {
    wakes.close();
    if (lock && (await lock.release().catch(() => false))) await engine.wake?.().catch(() => undefined);
  }
}
