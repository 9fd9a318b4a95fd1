import { LeadershipLost } from '../contract/errors.js';
import { SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../contract/names.js';
import type { Lock, RunSchedulesOpts, WakeReceiver } from '../contract/types.js';
import { runSchedulesInput } from '../contract/validate.js';
import { abortAfter, sleep } from './sleep.js';

/** Leadership lock TTL and renew cadence (SPEC §7). */
export const SCHEDULER_LOCK_TTL_MS = 60_000;
export const SCHEDULER_RENEW_MS = 20_000;

/** What the runner needs from an engine. */
export interface SchedulerEngine {
  tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null>;
  listen(channel: string): WakeReceiver;
  /**
   * Atomically, against the database clock: for every schedule whose next
   * fire is due, enqueue its boundaries (at most 64, then skip forward past
   * now) and advance its next fire. Resolves to the earliest next fire of any
   * schedule in epoch ms and the database's now, or null when there are none.
   */
  fireDue(): Promise<{ now: number; nextFireAt: number | null }>;
}

/** Engine-agnostic `runSchedules`: leader election, ticking, renewals, leadership loss. */
export async function runSchedules(engine: SchedulerEngine, signal: AbortSignal, opts?: RunSchedulesOpts): Promise<void> {
  const input = runSchedulesInput(signal, opts);
  const owner = input.owner ?? `runner-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  const maxTickMs = input.maxTickMs;
  const wakes = engine.listen(SCHEDULES_WAKE_CHANNEL);
  let lock: Lock | null = null;
  try {
    while (!signal.aborted) {
      if (!lock) {
        lock = await engine.tryLock(SCHEDULER_LOCK, owner, SCHEDULER_LOCK_TTL_MS);
        if (!lock) {
          // Someone else leads; try again when their lock could have lapsed or been released.
          await sleep(Math.min(maxTickMs, SCHEDULER_RENEW_MS), signal);
          continue;
        }
      }
      let renewAt = Date.now() + SCHEDULER_RENEW_MS;
      while (!signal.aborted) {
        if (Date.now() >= renewAt) {
          if (!(await lock.renew(SCHEDULER_LOCK_TTL_MS))) throw new LeadershipLost(owner);
          renewAt = Date.now() + SCHEDULER_RENEW_MS;
        }
        const { now, nextFireAt } = await engine.fireDue();
        const untilDue = nextFireAt === null ? maxTickMs : Math.max(0, nextFireAt - now);
        const wait = Math.min(untilDue, maxTickMs, Math.max(0, renewAt - Date.now()));
        if (wait > 0) {
          const timed = abortAfter(wait, signal);
          await wakes.recv(timed.signal).finally(timed.clear);
        }
      }
    }
  } finally {
    wakes.close();
    if (lock) await lock.release().catch(() => false);
  }
}
