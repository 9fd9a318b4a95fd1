import type { LockDriver } from '../shared/lock.js';
import type { PgContext } from './context.js';
import { num } from './connection.js';

/** Named locks on PostgreSQL: one statement each (lock.sql.ts), on the store's pool. */
export function postgresLockDriver(ctx: PgContext): LockDriver {
  return {
    guard: () => ctx.guard(),
    async take(name, owner, ttlMs) {
      const row = (
        await ctx.exec.run<{ owner: string; expires_at: string }>(ctx.sql.lock.tryLock, [name, owner, ttlMs])
      ).rows[0];
      return row ? num(row.expires_at) : null;
    },
    async renew(name, owner, ttlMs) {
      const row = (await ctx.exec.run<{ expires_at: string }>(ctx.sql.lock.renew, [name, owner, ttlMs])).rows[0];
      return row ? num(row.expires_at) : null;
    },
    async release(name, owner) {
      return (await ctx.exec.run(ctx.sql.lock.release, [name, owner])).rowCount > 0;
    },
  };
}
