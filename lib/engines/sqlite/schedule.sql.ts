import type { ScheduleColumns } from '../shared/scheduler.js';

/** SQL of schedules (docs/semantics.md, Scheduler). Times are the writer's database clock reading (`ctx.now`). */
const COLUMNS =
  'name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at, time_zone, catch_up, owner, paused';
export const GET_SCHEDULE = `SELECT ${COLUMNS} FROM __alkstore_schedules WHERE name = ?`;
export const ALL_SCHEDULES = `SELECT ${COLUMNS} FROM __alkstore_schedules ORDER BY name`;
// An upsert never touches `paused`: an operator's pause survives redeploys that re-declare the schedule.
export const UPSERT_SCHEDULE = `INSERT INTO __alkstore_schedules (name, spec, interval_ms, queue, payload, priority, max_attempts, expires_in_ms, next_fire_at, time_zone, catch_up, owner)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, interval_ms = excluded.interval_ms, queue = excluded.queue,
    payload = excluded.payload, priority = excluded.priority, max_attempts = excluded.max_attempts,
    expires_in_ms = excluded.expires_in_ms, next_fire_at = excluded.next_fire_at, time_zone = excluded.time_zone,
    catch_up = excluded.catch_up, owner = excluded.owner`;
export const DELETE_SCHEDULE = 'DELETE FROM __alkstore_schedules WHERE name = ?';
export const DUE_SCHEDULES = `SELECT ${COLUMNS} FROM __alkstore_schedules WHERE next_fire_at <= ? ORDER BY next_fire_at, name`;
export const SET_NEXT_FIRE = 'UPDATE __alkstore_schedules SET next_fire_at = ? WHERE name = ?';
export const SET_PAUSED = 'UPDATE __alkstore_schedules SET paused = ? WHERE name = ?';
export const EARLIEST_FIRE = 'SELECT min(next_fire_at) FROM __alkstore_schedules';

/** A schedule row. */
export type ScheduleRow = ScheduleColumns<number, number>;
