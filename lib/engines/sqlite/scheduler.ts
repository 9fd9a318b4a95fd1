import { SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS } from '../../contract/options.js';
import { firstFireAt } from '../../contract/schedule-spec.js';
import {
  duePlans,
  fireStamp,
  resumedNextFire,
  scheduleOf,
  storedSchedule,
  toSchedule,
  upsertParams,
  type ScheduleDriver,
  type StoredSchedule,
} from '../shared/scheduler.js';
import type { SqliteCore } from './context.js';
import { LOCK_HOLDER } from './lock.sql.js';
import { insertJobs } from './queue-ops.js';
import {
  ALL_SCHEDULES,
  DELETE_SCHEDULE,
  DUE_SCHEDULES,
  EARLIEST_FIRE,
  GET_SCHEDULE,
  SET_NEXT_FIRE,
  SET_PAUSED,
  UPSERT_SCHEDULE,
  type ScheduleRow,
} from './schedule.sql.js';
import type { WriteCtx } from './writer.js';

/** Schedules on SQLite (docs/semantics.md, Scheduler): the statements of schedule.sql.ts; the decisions are shared/scheduler.ts. */

function row(ctx: WriteCtx, name: string): StoredSchedule | null {
  const r = ctx.conn.stmt(GET_SCHEDULE).get(name) as ScheduleRow | undefined;
  return r ? storedSchedule(r) : null;
}

/** The schedule driver of a SQLite store: each operation one write (or read) of the store. */
export function sqliteScheduleDriver(core: SqliteCore): ScheduleDriver {
  /** One job per boundary, each stamped with its boundary (SCHEDULE_BOUNDARY_HEADER). */
  const enqueueFires = (ctx: WriteCtx, s: StoredSchedule, boundaries: readonly number[]): number[] => {
    const opts = core.registeredQueueOpts(s.queue, DEFAULT_QUEUE_OPTS);
    return boundaries.flatMap((boundary) => insertJobs(ctx, s.queue, [s.payloadText], fireStamp(opts, s, boundary)));
  };
  return {
    /** Same spec and zone keep the stored next fire; a new row or a changed spec or zone restarts at the first boundary. */
    upsert: (s) =>
      core.write('schedule', (ctx) => {
        const existing = row(ctx, s.name);
        const same = existing && existing.spec === s.parsed.spec && existing.timeZone === s.parsed.timeZone;
        const next = same ? existing.nextFireAt : firstFireAt(s.parsed, ctx.now, s.startAt);
        ctx.conn.stmt(UPSERT_SCHEDULE).run(...upsertParams(s, next));
        ctx.wake(SCHEDULES_WAKE_CHANNEL);
        return toSchedule(row(ctx, s.name)!);
      }),
    remove: (name) =>
      core.write('unschedule', (ctx) => {
        const gone = ctx.conn.stmt(DELETE_SCHEDULE).run(name).changes > 0;
        if (gone) ctx.wake(SCHEDULES_WAKE_CHANNEL);
        return gone;
      }),
    get: (name) =>
      core.read('getSchedule', (conn) => {
        const r = conn.stmt(GET_SCHEDULE).get(name) as ScheduleRow | undefined;
        return r ? scheduleOf(r) : null;
      }),
    list: () =>
      core.read('listSchedules', (conn) => {
        const now = conn.now();
        const leader = conn.stmt(LOCK_HOLDER).get(SCHEDULER_LOCK, now) as
          { owner: string; expires_at: number } | undefined;
        return {
          now,
          leader: leader ? { owner: leader.owner, expiresAt: leader.expires_at } : null,
          schedules: (conn.stmt(ALL_SCHEDULES).all() as ScheduleRow[]).map(scheduleOf),
        };
      }),
    setPaused: (name, paused) =>
      core.write(paused ? 'pauseSchedule' : 'resumeSchedule', (ctx) => {
        const s = row(ctx, name);
        if (!s) return false;
        ctx.conn.stmt(SET_PAUSED).run(paused ? 1 : 0, name);
        const next = paused ? null : resumedNextFire(s, ctx.now);
        if (next !== null) ctx.conn.stmt(SET_NEXT_FIRE).run(next, name);
        ctx.wake(SCHEDULES_WAKE_CHANNEL);
        return true;
      }),
    trigger: (name) =>
      core.write('triggerSchedule', (ctx) => {
        const s = row(ctx, name);
        return s ? enqueueFires(ctx, s, [ctx.now])[0]! : null;
      }),
    fireDue: () =>
      core.write('fireDue', (ctx) => {
        const now = ctx.now;
        for (const { s, boundaries, nextFireAt } of duePlans(
          ctx.conn.stmt(DUE_SCHEDULES).all(now) as ScheduleRow[],
          now,
        )) {
          if (boundaries.length > 0) enqueueFires(ctx, s, boundaries);
          ctx.conn.stmt(SET_NEXT_FIRE).run(nextFireAt, s.name);
        }
        return { now, nextFireAt: ctx.conn.pluck(EARLIEST_FIRE).get() as number | null };
      }),
    wake: () => core.write('wake', (ctx) => ctx.wake(SCHEDULES_WAKE_CHANNEL)),
  };
}
