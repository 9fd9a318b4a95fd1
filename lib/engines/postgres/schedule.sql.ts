import type { ScheduleColumns } from '../shared/scheduler.js';
import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** A schedule row; int8 columns are strings. */
export type ScheduleRow = ScheduleColumns<string, boolean>;

const COLS =
  's.name, s.spec, s.interval_ms, s.queue, s.payload::text AS payload, s.priority, s.max_attempts, s.expires_in_ms, s.next_fire_at, s.time_zone, s.catch_up, s.owner, s.paused';

/** Scheduler statements for one schema. */
export function scheduleSql(s: SchemaSql) {
  const schedules = `${s.q}.schedules`;
  return {
    /**
     * Upsert by name. $1 name, $2 spec, $3 interval (0 for cron), $4 queue, $5 payload,
     * $6 priority, $7 max attempts, $8 expires in, $9 first fire, $10 zone, $11 catch-up,
     * $12 owner, $13 wake payload. Same spec and zone keep the stored next fire; a new row
     * or a new spec or zone starts at $9. `paused` is never touched: an operator's pause
     * survives redeploys that re-declare the schedule.
     */
    upsert: s.def(
      'sc_upsert',
      `WITH up AS (
         INSERT INTO ${schedules} AS s (name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at, time_zone, catch_up, owner)
         VALUES ($1::text, $2::text, $3::bigint, $4::text, $5::text::json, $6::int, $7::int, $8::bigint, $9::bigint, $10::text, $11::text, $12::text)
         ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, interval_ms = EXCLUDED.interval_ms, queue = EXCLUDED.queue,
           payload = EXCLUDED.payload, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
           expires_in_ms = EXCLUDED.expires_in_ms, time_zone = EXCLUDED.time_zone, catch_up = EXCLUDED.catch_up, owner = EXCLUDED.owner,
           next_fire_at = CASE WHEN s.spec = EXCLUDED.spec AND s.time_zone = EXCLUDED.time_zone THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END
         RETURNING ${COLS}
       )
       SELECT up.*, ${s.notify('$13')}::text AS woke FROM up`,
    ),
    /** $1 name. */
    remove: s.def('sc_remove', `DELETE FROM ${schedules} WHERE name = $1::text`),
    /** $1 name. */
    get: s.def('sc_get', `SELECT ${COLS} FROM ${schedules} s WHERE s.name = $1::text`),
    /** $1 name. The row, locked until the transaction ends. */
    getForUpdate: s.def('sc_get_for_update', `SELECT ${COLS} FROM ${schedules} s WHERE s.name = $1::text FOR UPDATE`),
    all: s.def('sc_all', `SELECT ${COLS} FROM ${schedules} s ORDER BY s.name`),
    now: s.def('sc_now', `SELECT ${NOW_MS} AS ms`),
    /** $1 lock name → the database clock and the unexpired holder of the lock, if any. */
    leader: s.def(
      'sc_leader',
      `SELECT t.ms AS now, l.owner, l.expires_at FROM (SELECT ${NOW_MS} AS ms) t
       LEFT JOIN ${s.q}.locks l ON l.name = $1::text AND l.expires_at > t.ms`,
    ),
    /** $1 now. Locks due schedules; a concurrent runner skips them. */
    lockDue: s.def(
      'sc_lock_due',
      `SELECT ${COLS} FROM ${schedules} s WHERE s.next_fire_at <= $1::bigint ORDER BY s.next_fire_at, s.name FOR UPDATE SKIP LOCKED`,
    ),
    /** $1 name, $2 next fire. */
    advance: s.def('sc_advance', `UPDATE ${schedules} SET next_fire_at = $2::bigint WHERE name = $1::text`),
    /** $1 name, $2 paused, $3 wake payload. */
    setPaused: s.def(
      'sc_set_paused',
      `WITH up AS (UPDATE ${schedules} SET paused = $2::boolean WHERE name = $1::text RETURNING name)
       SELECT up.name, ${s.notify('$3')}::text AS woke FROM up`,
    ),
    nextFire: s.def('sc_next_fire', `SELECT min(next_fire_at) AS next FROM ${schedules}`),
  } satisfies Record<string, Sql>;
}

export type ScheduleSql = ReturnType<typeof scheduleSql>;
