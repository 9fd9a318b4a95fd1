import { encodeHeaders } from '../../contract/job-extras.js';
import { queueWakeChannel, SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../../contract/names.js';
import { resolveJobStamp } from '../../contract/options.js';
import { scheduleHeaders } from '../../contract/schedule-headers.js';
import { firstFireAt } from '../../contract/schedule-spec.js';
import {
  duePlans,
  fireJobOpts,
  resumedNextFire,
  scheduleOf,
  storedSchedule,
  upsertParams,
  type ScheduleDriver,
  type StoredSchedule,
} from '../shared/scheduler.js';
import { always, runWaking, stampParams, woke, type PgContext } from './context.js';
import { num, numOrNull, type Executor } from './connection.js';
import type { ScheduleRow } from './schedule.sql.js';
import { wakePayload } from './schema-sql.js';

/** Schedules on PostgreSQL (docs/semantics.md, Scheduler): the statements of schedule.sql.ts; the decisions are shared/scheduler.ts. */

async function dbNow(ctx: PgContext, exec: Executor): Promise<number> {
  return num((await exec.run<{ ms: string }>(ctx.sql.schedule.now, [])).rows[0]!.ms);
}

/**
 * One job per boundary, each stamped with its boundary (SCHEDULE_BOUNDARY_HEADER), in boundary
 * order, in one statement (the jobs of one tick share one `enqueuedAt`, as on SQLite).
 */
async function enqueueFires(
  ctx: PgContext,
  exec: Executor,
  s: StoredSchedule,
  boundaries: readonly number[],
): Promise<number[]> {
  const stamp = resolveJobStamp(ctx.queueOpts(s.queue), fireJobOpts(s));
  const headers = boundaries.map((b) => encodeHeaders(scheduleHeaders(s.name, b)));
  const texts = boundaries.map(() => s.payloadText);
  const wake = wakePayload(queueWakeChannel(s.queue));
  const r = await exec.wakes.run(
    wake,
    (w) =>
      exec.run<{ id: string }>(ctx.sql.queue.enqueueManyHeaders, [s.queue, texts, ...stampParams(stamp), w, headers]),
    always,
  );
  return r.rows.map((x) => num(x.id));
}

/** The schedule driver of a PostgreSQL store. */
export function postgresScheduleDriver(ctx: PgContext): ScheduleDriver {
  const schedulesWake = wakePayload(SCHEDULES_WAKE_CHANNEL);
  return {
    /** The first fire is computed from the database clock read just before. */
    async upsert(s) {
      const now = await dbNow(ctx, ctx.exec);
      const r = await runWaking<ScheduleRow>(
        ctx,
        ctx.sql.schedule.upsert,
        upsertParams(s, firstFireAt(s.parsed, now, s.startAt)),
        schedulesWake,
        woke,
      );
      return scheduleOf(r.rows[0]!);
    },
    async remove(name) {
      return (await ctx.exec.run(ctx.sql.schedule.remove, [name])).rowCount > 0;
    },
    async get(name) {
      const row = (await ctx.exec.run<ScheduleRow>(ctx.sql.schedule.get, [name])).rows[0];
      return row ? scheduleOf(row) : null;
    },
    async list() {
      const lead = (
        await ctx.exec.run<{ now: string; owner: string | null; expires_at: string | null }>(ctx.sql.schedule.leader, [
          SCHEDULER_LOCK,
        ])
      ).rows[0]!;
      const rows = await ctx.exec.run<ScheduleRow>(ctx.sql.schedule.all, []);
      return {
        now: num(lead.now),
        leader: lead.owner === null ? null : { owner: lead.owner, expiresAt: num(lead.expires_at!) },
        schedules: rows.rows.map(scheduleOf),
      };
    },
    async setPaused(name, paused) {
      if (paused)
        return (await runWaking(ctx, ctx.sql.schedule.setPaused, [name, true], schedulesWake, woke)).rows.length > 0;
      // Clear the flag and skip what elapsed meanwhile, in one transaction.
      return ctx.inTransaction(async (exec) => {
        const row = (await exec.run<ScheduleRow>(ctx.sql.schedule.getForUpdate, [name])).rows[0];
        if (!row) return false;
        const next = resumedNextFire(storedSchedule(row), await dbNow(ctx, exec));
        if (next !== null) await exec.run(ctx.sql.schedule.advance, [name, next]);
        await exec.wakes.run(schedulesWake, (w) => exec.run(ctx.sql.schedule.setPaused, [name, false, w]), woke);
        return true;
      });
    },
    async trigger(name) {
      const row = (await ctx.exec.run<ScheduleRow>(ctx.sql.schedule.get, [name])).rows[0];
      if (!row) return null;
      return (await enqueueFires(ctx, ctx.exec, storedSchedule(row), [await dbNow(ctx, ctx.exec)]))[0]!;
    },
    /** Due schedules are locked with SKIP LOCKED, so two runners never fire one boundary twice. */
    fireDue() {
      return ctx.inTransaction(async (exec) => {
        const now = await dbNow(ctx, exec);
        const due = (await exec.run<ScheduleRow>(ctx.sql.schedule.lockDue, [now])).rows;
        for (const { s, boundaries, nextFireAt } of duePlans(due, now)) {
          if (boundaries.length > 0) await enqueueFires(ctx, exec, s, boundaries);
          await exec.run(ctx.sql.schedule.advance, [s.name, nextFireAt]);
        }
        const next = (await exec.run<{ next: string | null }>(ctx.sql.schedule.nextFire, [])).rows[0]?.next ?? null;
        return { now, nextFireAt: numOrNull(next) };
      });
    },
    async wake() {
      await ctx.exec.wakes.run(schedulesWake, (w) => ctx.exec.run(ctx.sql.notify.notify, [w]), always);
    },
  };
}
