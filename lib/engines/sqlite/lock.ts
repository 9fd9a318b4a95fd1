import { requireDurationMs } from '../../contract/validate.js';
import type { Lock } from '../../contract/types.js';
import type { SqliteCore } from './context.js';
import type { WriteCtx } from './writer.js';

/** SQL of named locks (docs/semantics.md, Locks). */
const GET = 'SELECT owner, expires_at FROM __alkstore_locks WHERE name = ?';
const TAKE = `INSERT INTO __alkstore_locks (name, owner, expires_at) VALUES (?, ?, ?)
  ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`;
const RENEW = 'UPDATE __alkstore_locks SET expires_at = @now + @ttl WHERE name = @name AND owner = @owner AND expires_at > @now RETURNING expires_at';
const RELEASE = 'DELETE FROM __alkstore_locks WHERE name = @name AND owner = @owner AND expires_at > @now';

/** Free or expired: take it. Held by `owner`: return it unextended. Held by another: null. */
export function tryLockRow(ctx: WriteCtx, name: string, owner: string, ttlMs: number): number | null {
  const now = ctx.now;
  const row = ctx.conn.stmt(GET).get(name) as { owner: string; expires_at: number } | undefined;
  if (row && row.expires_at > now) return row.owner === owner ? row.expires_at : null;
  ctx.conn.stmt(TAKE).run(name, owner, now + ttlMs);
  return now + ttlMs;
}

/** A held lock; renew/release succeed only while still held by this owner. */
export class SqliteLock implements Lock {
  constructor(
    private readonly core: SqliteCore,
    readonly name: string,
    readonly owner: string,
    private expiry: number,
  ) {}

  get expiresAt(): number {
    return this.expiry;
  }

  async renew(ttlMs: number): Promise<boolean> {
    const ttl = requireDurationMs('ttlMs', ttlMs);
    const row = await this.core.write('renew', (ctx) => ctx.conn.stmt(RENEW).get({ name: this.name, owner: this.owner, ttl, now: ctx.now }) as { expires_at: number } | undefined, false, ttl);
    if (!row) return false;
    this.expiry = row.expires_at;
    return true;
  }

  release(): Promise<boolean> {
    return this.core.write('release', (ctx) => ctx.conn.stmt(RELEASE).run({ name: this.name, owner: this.owner, now: ctx.now }).changes > 0);
  }
}
