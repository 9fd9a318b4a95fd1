import type { LockDriver } from '../shared/lock.js';
import type { SqliteCore } from './context.js';
import { GET_LOCK, RELEASE_LOCK, RENEW_LOCK, TAKE_LOCK } from './lock.sql.js';

/** Named locks on SQLite: one write each through the store's writer (lock.sql.ts). */
export function sqliteLockDriver(core: SqliteCore, guard: () => void): LockDriver {
  return {
    guard,
    take: (name, owner, ttlMs) =>
      core.write('tryLock', (ctx) => {
        const now = ctx.now;
        const row = ctx.conn.stmt(GET_LOCK).get(name) as { owner: string; expires_at: number } | undefined;
        if (row && row.expires_at > now) return row.owner === owner ? row.expires_at : null;
        ctx.conn.stmt(TAKE_LOCK).run(name, owner, now + ttlMs);
        return now + ttlMs;
      }),
    // A renewal is urgent for its own TTL: an open application transaction may not make it wait past it.
    renew: (name, owner, ttlMs) =>
      core.write(
        'renew',
        (ctx) =>
          (
            ctx.conn.stmt(RENEW_LOCK).get({ name, owner, ttl: ttlMs, now: ctx.now }) as
              { expires_at: number } | undefined
          )?.expires_at ?? null,
        false,
        ttlMs,
      ),
    release: (name, owner) =>
      core.write('release', (ctx) => ctx.conn.stmt(RELEASE_LOCK).run({ name, owner, now: ctx.now }).changes > 0),
  };
}
