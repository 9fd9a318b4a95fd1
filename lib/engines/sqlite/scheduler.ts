import { decodePayload } from '../../contract/codec.js';
import { SCHEDULER_LOCK, SCHEDULES_WAKE_CHANNEL } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS, resolveJobStamp, type QueueOpts } from '../../contract/options.js';
import { scheduleHeaders } from '../../contract/schedule-headers.js';
import { dueFireBoundaries, dueFires, firstFireAt, NEVER_MS } from '../../contract/schedule-spec.js';
import { parseScheduleSpecSync } from '../../internal/load-cron.js';
import type { CatchUpPolicy, Schedule, ScheduleListing } from '../../contract/types.js';
import type { ScheduleInput } from '../../internal/schedule-input.js';
import { insertJobs } from './queue-ops.js';
import type { WriteCtx } from './writer.js';
import type { SqliteConn } from './connection.js';

/** SQL and row logic of schedules (docs/semantics.md, Scheduler). */

const COLUMNS = 'name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at, time_zone, catch_up, owner, paused';
const GET = `SELECT ${COLUMNS} FROM __alkstore_schedules WHERE name = ?`;
const ALL = `SELECT ${COLUMNS} FROM __alkstore_schedules ORDER BY name`;
// An upsert never touches `paused`: an operator's pause survives redeploys that re-declare the schedule.
const UPSERT = `INSERT INTO __alkstore_schedules (name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at, time_zone, catch_up, owner)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, interval_ms = excluded.interval_ms, queue = excluded.queue,
    payload = excluded.payload, priority = excluded.priority, max_attempts = excluded.max_attempts,
    expires_in_ms = excluded.expires_in_ms, next_fire_at = excluded.next_fire_at, time_zone = excluded.time_zone,
    catch_up = excluded.catch_up, owner = excluded.owner`;
const DELETE = 'DELETE FROM __alkstore_schedules WHERE name = ?';
const DUE = `SELECT ${COLUMNS} FROM __alkstore_schedules WHERE next_fire_at <= ? ORDER BY next_fire_at, name`;
const SET_NEXT = 'UPDATE __alkstore_schedules SET next_fire_at = ? WHERE name = ?';
const SET_PAUSED = 'UPDATE __alkstore_schedules SET paused = ? WHERE name = ?';
const EARLIEST = 'SELECT min(next_fire_at) FROM __alkstore_schedules';
const LEADER = 'SELECT owner, expires_at FROM __alkstore_locks WHERE name = ? AND expires_at > ?';

interface ScheduleRow {
  name: string;
  spec: string;
  interval_ms: number;
  queue: string;
  payload: string;
  priority: number;
  max_attempts: number | null;
  expires_in_ms: number | null;
  next_fire_at: number;
  time_zone: string;
  catch_up: CatchUpPolicy;
  owner: string | null;
  paused: number;
}

function toSchedule(r: ScheduleRow): Schedule {
  return {
    name: r.name,
    spec: r.spec,
    intervalMs: r.interval_ms > 0 ? r.interval_ms : null,
    timeZone: r.time_zone,
    catchUp: r.catch_up,
    queue: r.queue,
    payload: decodePayload(r.payload, `payload of schedule ${JSON.stringify(r.name)}`),
    priority: r.priority,
    maxAttempts: r.max_attempts,
    expiresInMs: r.expires_in_ms,
    nextFireAt: r.next_fire_at,
    paused: r.paused !== 0,
    owner: r.owner,
  };
}

/** Same spec and zone keep the stored next fire; a new row or a changed spec or zone restarts at the first boundary. */
export function upsertSchedule(ctx: WriteCtx, s: ScheduleInput): Schedule {
  const existing = ctx.conn.stmt(GET).get(s.name) as ScheduleRow | undefined;
  const same = existing && existing.spec === s.parsed.spec && existing.time_zone === s.parsed.timeZone;
  const next = same ? existing.next_fire_at : firstFireAt(s.parsed, ctx.now, s.startAt);
  ctx.conn
    .stmt(UPSERT)
    .run(s.name, s.parsed.spec, s.parsed.intervalMs ?? 0, s.queue, s.payloadText, s.priority, s.maxAttempts, s.expiresInMs, next, s.parsed.timeZone, s.catchUp, s.owner);
  ctx.wake(SCHEDULES_WAKE_CHANNEL);
  return toSchedule(ctx.conn.stmt(GET).get(s.name) as ScheduleRow);
}

export function deleteSchedule(ctx: WriteCtx, name: string): boolean {
  const gone = ctx.conn.stmt(DELETE).run(name).changes > 0;
  if (gone) ctx.wake(SCHEDULES_WAKE_CHANNEL);
  return gone;
}

export function readSchedule(conn: SqliteConn, name: string): Schedule | null {
  const row = conn.stmt(GET).get(name) as ScheduleRow | undefined;
  return row ? toSchedule(row) : null;
}

export function listSchedules(conn: SqliteConn): ScheduleListing {
  const now = conn.now();
  const leader = conn.stmt(LEADER).get(SCHEDULER_LOCK, now) as { owner: string; expires_at: number } | undefined;
  return {
    now,
    leader: leader ? { owner: leader.owner, expiresAt: leader.expires_at } : null,
    schedules: (conn.stmt(ALL).all() as ScheduleRow[]).map(toSchedule),
  };
}

/** Pause sets the flag; resume clears it and skips boundaries that elapsed meanwhile. */
export function setSchedulePaused(ctx: WriteCtx, name: string, paused: boolean): boolean {
  const row = ctx.conn.stmt(GET).get(name) as ScheduleRow | undefined;
  if (!row) return false;
  ctx.conn.stmt(SET_PAUSED).run(paused ? 1 : 0, name);
  if (!paused && row.next_fire_at <= ctx.now) {
    const { nextFireAt } = dueFires(specOf(row), row.next_fire_at, ctx.now, row.catch_up, true);
    ctx.conn.stmt(SET_NEXT).run(nextFireAt, name);
  }
  ctx.wake(SCHEDULES_WAKE_CHANNEL);
  return true;
}

type QueueOptsOf = (queue: string, defaults: Readonly<Required<QueueOpts>>) => Required<QueueOpts>;

/** One job per boundary, each stamped with its boundary (SCHEDULE_BOUNDARY_HEADER). */
function enqueueFires(ctx: WriteCtx, r: ScheduleRow, boundaries: readonly number[], queueOpts: QueueOptsOf): number[] {
  const opts = queueOpts(r.queue, DEFAULT_QUEUE_OPTS);
  return boundaries.flatMap((boundary) => {
    const stamp = resolveJobStamp(opts, {
      priority: r.priority,
      maxAttempts: r.max_attempts ?? undefined,
      expiresInMs: r.expires_in_ms ?? undefined,
      headers: scheduleHeaders(r.name, boundary),
    });
    return insertJobs(ctx, r.queue, [r.payload], stamp);
  });
}

/** One job of the schedule now, for the boundary "now"; its next fire is unchanged. */
export function triggerSchedule(ctx: WriteCtx, name: string, queueOpts: QueueOptsOf): number | null {
  const row = ctx.conn.stmt(GET).get(name) as ScheduleRow | undefined;
  return row ? enqueueFires(ctx, row, [ctx.now], queueOpts)[0]! : null;
}

function specOf(r: ScheduleRow) {
  return parseScheduleSpecSync(r.spec, r.time_zone);
}

/** One transaction: enqueue every due boundary the catch-up policy allows, and advance. */
export function fireDueSchedules(ctx: WriteCtx, queueOpts: QueueOptsOf): { now: number; nextFireAt: number | null } {
  const now = ctx.now;
  for (const r of ctx.conn.stmt(DUE).all(now) as ScheduleRow[]) {
    if (r.next_fire_at >= NEVER_MS) continue;
    const { boundaries, nextFireAt } = dueFireBoundaries(specOf(r), r.next_fire_at, now, r.catch_up, r.paused !== 0);
    if (boundaries.length > 0) enqueueFires(ctx, r, boundaries, queueOpts);
    ctx.conn.stmt(SET_NEXT).run(nextFireAt, r.name);
  }
  const earliest = ctx.conn.pluck(EARLIEST).get() as number | null;
  return { now, nextFireAt: earliest };
}
