import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** A schedule row; int8 columns are strings. */
export interface ScheduleRow {
  name: string;
  spec: string;
  interval_ms: string;
  queue: string;
  payload: string;
  priority: number;
  max_attempts: number | null;
  expires_in_ms: string | null;
  next_fire_at: string;
}

const COLS = 's.name, s.spec, s.interval_ms, s.queue, s.payload::text AS payload, s.priority, s.max_attempts, s.expires_in_ms, s.next_fire_at';

/** Scheduler statements for one schema. */
export function scheduleSql(s: SchemaSql) {
  const schedules = `${s.q}.schedules`;
  return {
    /**
     * Upsert by name. $1 name, $2 spec, $3 interval, $4 queue, $5 payload,
     * $6 priority, $7 max attempts, $8 expires in, $9 start at, $10 wake payload.
     * Same spec keeps the stored next fire; a new row or a new spec restarts it.
     */
    upsert: s.def(
      'sc_upsert',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       up AS (
         INSERT INTO ${schedules} AS s (name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at)
         SELECT $1::text, $2::text, $3::bigint, $4::text, $5::text::json, $6::int, $7::int, $8::bigint, coalesce($9::bigint, t.ms + $3::bigint) FROM t
         ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, interval_ms = EXCLUDED.interval_ms, queue = EXCLUDED.queue,
           payload = EXCLUDED.payload, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
           expires_in_ms = EXCLUDED.expires_in_ms,
           next_fire_at = CASE WHEN s.spec = EXCLUDED.spec THEN s.next_fire_at ELSE EXCLUDED.next_fire_at END
         RETURNING ${COLS}
       )
       SELECT up.*, ${s.notify('$10')}::text AS woke FROM up`,
    ),
    /** $1 name. */
    remove: s.def('sc_remove', `DELETE FROM ${schedules} WHERE name = $1::text`),
    /** $1 name. */
    get: s.def('sc_get', `SELECT ${COLS} FROM ${schedules} s WHERE s.name = $1::text`),
    now: s.def('sc_now', `SELECT ${NOW_MS} AS ms`),
    /** $1 now. Locks due schedules; a concurrent runner skips them. */
    lockDue: s.def(
      'sc_lock_due',
      `SELECT ${COLS} FROM ${schedules} s WHERE s.next_fire_at <= $1::bigint ORDER BY s.next_fire_at, s.name FOR UPDATE SKIP LOCKED`,
    ),
    /** $1 name, $2 next fire. */
    advance: s.def('sc_advance', `UPDATE ${schedules} SET next_fire_at = $2::bigint WHERE name = $1::text`),
    nextFire: s.def('sc_next_fire', `SELECT min(next_fire_at) AS next FROM ${schedules}`),
    /** $1 after name or null, $2 limit (admin listing, name order). */
    list: s.def('sc_list', `SELECT ${COLS} FROM ${schedules} s WHERE ($1::text IS NULL OR s.name > $1::text) ORDER BY s.name LIMIT $2::int`),
  } satisfies Record<string, Sql>;
}

export type ScheduleSql = ReturnType<typeof scheduleSql>;
