import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** Notify statements for one schema: every wake is one `pg_notify` on the schema's engine channel. */
export function notifySql(s: SchemaSql) {
  return {
    /** $1 wake payload (`c:<channel>` or `h:<hash>`). */
    notify: s.def('n_notify', `SELECT ${s.notify('$1')}::text AS woke`),
    /** $1 wake payloads text[]: one notification each, in one statement. */
    notifyMany: s.def('n_notify_many', `SELECT count(${s.notify('p')}) AS n FROM unnest($1::text[]) AS p`),
    now: s.def('n_now', `SELECT ${NOW_MS} AS ms`),
  } satisfies Record<string, Sql>;
}

export type NotifySql = ReturnType<typeof notifySql>;
