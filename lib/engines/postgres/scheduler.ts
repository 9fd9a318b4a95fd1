import { decodePayload } from '../../contract/codec.js';
import { encodeHeaders } from '../../contract/job-extras.js';
import { queueWakeChannel, SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../../contract/names.js';
import { resolveJobStamp } from '../../contract/options.js';
import { scheduleHeaders } from '../../contract/schedule-headers.js';
import { dueFireBoundaries, dueFires, firstFireAt, NEVER_MS } from '../../contract/schedule-spec.js';
import { parseScheduleSpecSync } from '../../internal/load-cron.js';
import type { Schedule, ScheduleListing } from '../../contract/types.js';
import type { ScheduleInput } from '../../internal/schedule-input.js';
import { always, runWaking, stampParams, woke, type PgContext } from './context.js';
import { num, numOrNull, type Executor } from './executor.js';
import type { ScheduleRow } from './schedule.sql.js';

export type { ScheduleRow };
import { wakePayload } from './schema-sql.js';

/** Schedule logic of the PostgreSQL engine (docs/semantics.md, Scheduler); the store delegates here. */

type InTransaction = <T>(fn: (exec: Executor) => Promise<T>) => Promise<T>;

export function toSchedule(row: ScheduleRow): Schedule {
  const interval = num(row.interval_ms);
  return {
    name: row.name,
    spec: row.spec,
    intervalMs: interval > 0 ? interval : null,
    timeZone: row.time_zone,
    catchUp: row.catch_up,
    queue: row.queue,
    payload: decodePayload(row.payload, `payload of schedule ${JSON.stringify(row.name)}`),
    priority: row.priority,
    maxAttempts: row.max_attempts,
    expiresInMs: numOrNull(row.expires_in_ms),
    nextFireAt: num(row.next_fire_at),
    paused: row.paused,
    owner: row.owner,
  };
}

function specOf(row: ScheduleRow) {
  return parseScheduleSpecSync(row.spec, row.time_zone);
}

/** Upsert; the first fire is computed from the database clock read just before. */
export async function upsertSchedule(ctx: PgContext, s: ScheduleInput): Promise<Schedule> {
  const now = num((await ctx.exec.run<{ ms: string }>(ctx.sql.schedule.now, [])).rows[0]!.ms);
  const r = await runWaking<ScheduleRow>(ctx, ctx.sql.schedule.upsert, [
    s.name,
    s.parsed.spec,
    s.parsed.intervalMs ?? 0,
    s.queue,
    s.payloadText,
    s.priority,
    s.maxAttempts,
    s.expiresInMs,
    firstFireAt(s.parsed, now, s.startAt),
    s.parsed.timeZone,
    s.catchUp,
    s.owner,
  ], wakePayload(SCHEDULES_WAKE_CHANNEL), woke);
  return toSchedule(r.rows[0]!);
}

export async function listSchedules(ctx: PgContext): Promise<ScheduleListing> {
  const lead = (await ctx.exec.run<{ now: string; owner: string | null; expires_at: string | null }>(ctx.sql.schedule.leader, [SCHEDULER_LOCK])).rows[0]!;
  const rows = await ctx.exec.run<ScheduleRow>(ctx.sql.schedule.all, []);
  return {
    now: num(lead.now),
    leader: lead.owner === null ? null : { owner: lead.owner, expiresAt: num(lead.expires_at!) },
    schedules: rows.rows.map(toSchedule),
  };
}

export async function pauseSchedule(ctx: PgContext, name: string): Promise<boolean> {
  const r = await runWaking(ctx, ctx.sql.schedule.setPaused, [name, true], wakePayload(SCHEDULES_WAKE_CHANNEL), woke);
  return r.rows.length > 0;
}

/** Clears the flag and skips the boundaries that elapsed while paused, in one transaction. */
export async function resumeSchedule(ctx: PgContext, inTransaction: InTransaction, name: string): Promise<boolean> {
  return inTransaction(async (exec) => {
    const row = (await exec.run<ScheduleRow>(ctx.sql.schedule.getForUpdate, [name])).rows[0];
    if (!row) return false;
    const now = num((await exec.run<{ ms: string }>(ctx.sql.schedule.now, [])).rows[0]!.ms);
    const next = num(row.next_fire_at);
    if (next <= now) await exec.run(ctx.sql.schedule.advance, [name, dueFires(specOf(row), next, now, row.catch_up, true).nextFireAt]);
    await exec.wakes.run(wakePayload(SCHEDULES_WAKE_CHANNEL), (w) => exec.run(ctx.sql.schedule.setPaused, [name, false, w]), woke);
    return true;
  });
}

/**
 * One job per boundary, each stamped with its boundary (SCHEDULE_BOUNDARY_HEADER), in boundary
 * order, in one statement (the jobs of one tick share one `enqueuedAt`, as on SQLite).
 */
async function enqueueFires(ctx: PgContext, exec: Executor, row: ScheduleRow, boundaries: readonly number[]): Promise<number[]> {
  const stamp = resolveJobStamp(ctx.queueOpts(row.queue), { priority: row.priority, maxAttempts: row.max_attempts ?? undefined, expiresInMs: numOrNull(row.expires_in_ms) ?? undefined });
  const headers = boundaries.map((b) => encodeHeaders(scheduleHeaders(row.name, b)));
  const texts = boundaries.map(() => row.payload);
  const wake = wakePayload(queueWakeChannel(row.queue));
  const r = await exec.wakes.run(wake, (w) => exec.run<{ id: string }>(ctx.sql.queue.enqueueManyHeaders, [row.queue, texts, ...stampParams(stamp), w, headers]), always);
  return r.rows.map((x) => num(x.id));
}

/** One job of the schedule now, for the boundary "now" (database time); its next fire is unchanged. */
export async function triggerSchedule(ctx: PgContext, name: string): Promise<number | null> {
  const row = (await ctx.exec.run<ScheduleRow>(ctx.sql.schedule.get, [name])).rows[0];
  if (!row) return null;
  const now = num((await ctx.exec.run<{ ms: string }>(ctx.sql.schedule.now, [])).rows[0]!.ms);
  return (await enqueueFires(ctx, ctx.exec, row, [now]))[0]!;
}

/** One transaction: lock due schedules (SKIP LOCKED), enqueue what their catch-up policy allows, advance them. */
export async function fireDue(ctx: PgContext, inTransaction: InTransaction): Promise<{ now: number; nextFireAt: number | null }> {
  return inTransaction(async (exec) => {
    const now = num((await exec.run<{ ms: string }>(ctx.sql.schedule.now, [])).rows[0]!.ms);
    const due = await exec.run<ScheduleRow>(ctx.sql.schedule.lockDue, [now]);
    for (const row of due.rows) {
      if (num(row.next_fire_at) >= NEVER_MS) continue;
      const { boundaries, nextFireAt } = dueFireBoundaries(specOf(row), num(row.next_fire_at), now, row.catch_up, row.paused);
      if (boundaries.length > 0) await enqueueFires(ctx, exec, row, boundaries);
      await exec.run(ctx.sql.schedule.advance, [row.name, nextFireAt]);
    }
    const next = (await exec.run<{ next: string | null }>(ctx.sql.schedule.nextFire, [])).rows[0]?.next ?? null;
    return { now, nextFireAt: numOrNull(next) };
  });
}
