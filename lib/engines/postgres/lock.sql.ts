import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** Lock statements for one schema. */
export function lockSql(s: SchemaSql) {
  const locks = `${s.q}.locks`;
  return {
    /**
     * $1 name, $2 owner, $3 ttl ms → (owner, expires_at) when held by $2.
     * Takes a free or expired lock; returns an unexpired lock of the same owner
     * unchanged (re-acquiring never extends it); a lock held by another → no row.
     */
    tryLock: s.def(
      'l_try',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       took AS (
         INSERT INTO ${locks} AS l (name, owner, expires_at) SELECT $1::text, $2::text, t.ms + $3::bigint FROM t
         ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
           WHERE l.expires_at <= EXCLUDED.expires_at - $3::bigint
         RETURNING l.owner, l.expires_at
       )
       SELECT owner, expires_at FROM took
       UNION ALL
       SELECT l.owner, l.expires_at FROM ${locks} l, t
       WHERE l.name = $1::text AND l.owner = $2::text AND l.expires_at > t.ms AND NOT EXISTS (SELECT 1 FROM took)`,
    ),
    /** $1 name, $2 owner, $3 ttl ms → expires_at while still held. */
    renew: s.def(
      'l_renew',
      `UPDATE ${locks} l SET expires_at = t.ms + $3::bigint FROM (SELECT ${NOW_MS} AS ms) t
       WHERE l.name = $1::text AND l.owner = $2::text AND l.expires_at > t.ms RETURNING l.expires_at`,
    ),
    /** $1 name, $2 owner. */
    release: s.def(
      'l_release',
      `DELETE FROM ${locks} l USING (SELECT ${NOW_MS} AS ms) t WHERE l.name = $1::text AND l.owner = $2::text AND l.expires_at > t.ms`,
    ),
  } satisfies Record<string, Sql>;
}

export type LockSql = ReturnType<typeof lockSql>;
