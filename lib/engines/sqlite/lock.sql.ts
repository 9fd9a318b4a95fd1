/** SQL of named locks (docs/semantics.md, Locks). Times are the writer's database clock reading (`ctx.now`). */
export const GET_LOCK = 'SELECT owner, expires_at FROM __alkstore_locks WHERE name = ?';
export const TAKE_LOCK = `INSERT INTO __alkstore_locks (name, owner, expires_at) VALUES (?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`;
export const RENEW_LOCK =
  'UPDATE __alkstore_locks SET expires_at = @now + @ttl WHERE name = @name AND owner = @owner AND expires_at > @now RETURNING expires_at';
export const RELEASE_LOCK = 'DELETE FROM __alkstore_locks WHERE name = @name AND owner = @owner AND expires_at > @now';
/** The scheduler's leader, for `listSchedules`. */
export const LOCK_HOLDER = 'SELECT owner, expires_at FROM __alkstore_locks WHERE name = ? AND expires_at > ?';
