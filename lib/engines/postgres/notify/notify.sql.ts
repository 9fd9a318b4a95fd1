// Sending wakes on PostgreSQL: pg_notify on the engine channel; SQLite's notify/notify.sql.ts writes wake rows into a log table.
import { NOW_MS, type SchemaSql, type Sql } from '../schema-sql.js';

/** Notify statements for one schema: every wake is one `pg_notify` on the schema's engine channel. */
export function notifySql(s: SchemaSql) {
  return {
    /** $1 wake payload (`c:<channel>` or `h:<hash>`). */
    notify: s.def('n_notify', `SELECT ${s.notify('$1')}::text AS woke`),
    now: s.def('n_now', `SELECT ${NOW_MS} AS ms`),
  } satisfies Record<string, Sql>;
}

export type NotifySql = ReturnType<typeof notifySql>;
