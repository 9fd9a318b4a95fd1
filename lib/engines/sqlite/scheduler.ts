import { decodePayload } from '../../contract/codec.js';
import { SCHEDULES_WAKE_CHANNEL } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS, resolveJobStamp, type QueueOpts } from '../../contract/options.js';
import { dueBoundaries } from '../../contract/schedule-spec.js';
import type { Schedule } from '../../contract/types.js';
import { insertJobs } from './queue-ops.js';
import type { WriteCtx } from './writer.js';
import type { SqliteConn } from './connection.js';

/** SQL and row logic of schedules (docs/semantics.md, Scheduler). */

const COLUMNS = 'name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at';
const GET = `SELECT ${COLUMNS} FROM __alkstore_schedules WHERE name = ?`;
const UPSERT = `INSERT INTO __alkstore_schedules (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, interval_ms = excluded.interval_ms, queue = excluded.queue,
    payload = excluded.payload, priority = excluded.priority, max_attempts = excluded.max_attempts,
    expires_in_ms = excluded.expires_in_ms, next_fire_at = excluded.next_fire_at`;
const DELETE = 'DELETE FROM __alkstore_schedules WHERE name = ?';
const DUE = `SELECT ${COLUMNS} FROM __alkstore_schedules WHERE next_fire_at <= ? ORDER BY next_fire_at, name`;
const SET_NEXT = 'UPDATE __alkstore_schedules SET next_fire_at = ? WHERE name = ?';
const EARLIEST = 'SELECT min(next_fire_at) FROM __alkstore_schedules';

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
}

function toSchedule(r: ScheduleRow): Schedule {
  return {
    name: r.name,
    spec: r.spec,
    intervalMs: r.interval_ms,
    queue: r.queue,
    payload: decodePayload(r.payload, `payload of schedule ${JSON.stringify(r.name)}`),
    priority: r.priority,
    maxAttempts: r.max_attempts,
    expiresInMs: r.expires_in_ms,
    nextFireAt: r.next_fire_at,
  };
}

/** A validated schedule to upsert. */
export interface ScheduleInput {
  name: string;
  spec: string;
  intervalMs: number;
  queue: string;
  payloadText: string;
  priority: number;
  maxAttempts: number | null;
  expiresInMs: number | null;
  startAt: number | null;
}

/** Same spec keeps the stored next fire; a new row or a changed spec restarts at startAt ?? now + interval. */
export function upsertSchedule(ctx: WriteCtx, s: ScheduleInput): Schedule {
  const existing = ctx.conn.stmt(GET).get(s.name) as ScheduleRow | undefined;
  const next = existing && existing.spec === s.spec ? existing.next_fire_at : (s.startAt ?? ctx.now + s.intervalMs);
  ctx.conn.stmt(UPSERT).run(s.name, s.spec, s.intervalMs, s.queue, s.payloadText, s.priority, s.maxAttempts, s.expiresInMs, next);
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

/** Schedules after `after` in name order (admin listing). */
export function listSchedulesPage(conn: SqliteConn, after: string | null, limit: number): Schedule[] {
  const rows = conn.stmt(`SELECT ${COLUMNS} FROM __alkstore_schedules WHERE (@after IS NULL OR name > @after) ORDER BY name LIMIT @limit`).all({ after, limit }) as ScheduleRow[];
  return rows.map(toSchedule);
}

/** One transaction: enqueue every due boundary (at most 64 per schedule, then skip forward) and advance. */
export function fireDueSchedules(
  ctx: WriteCtx,
  queueOpts: (queue: string, defaults: Readonly<Required<QueueOpts>>) => Required<QueueOpts>,
): { now: number; nextFireAt: number | null } {
  const now = ctx.now;
  for (const r of ctx.conn.stmt(DUE).all(now) as ScheduleRow[]) {
    const { fires, nextFireAt } = dueBoundaries(r.next_fire_at, r.interval_ms, now);
    const stamp = resolveJobStamp(queueOpts(r.queue, DEFAULT_QUEUE_OPTS), {
      priority: r.priority,
      maxAttempts: r.max_attempts ?? undefined,
      expiresInMs: r.expires_in_ms ?? undefined,
    });
    insertJobs(ctx, r.queue, fires.map(() => r.payload), stamp);
    ctx.conn.stmt(SET_NEXT).run(nextFireAt, r.name);
  }
  const earliest = ctx.conn.pluck(EARLIEST).get() as number | null;
  return { now, nextFireAt: earliest };
}
