import { requireDurationMs } from '../../contract/validate.js';
import type { Lock } from '../../contract/types.js';
import type { PgContext } from './context.js';
import { num } from './executor.js';

/** A held lock; renew and release are conditional on owner and unexpired TTL. */
export class PostgresLock implements Lock {
  constructor(
    private readonly ctx: PgContext,
    readonly name: string,
    readonly owner: string,
    public expiresAt: number,
  ) {}

  async renew(ttlMs: number): Promise<boolean> {
    this.ctx.guard();
    const ttl = requireDurationMs('ttlMs', ttlMs);
    const r = await this.ctx.exec.run<{ expires_at: string }>(this.ctx.sql.lock.renew, [this.name, this.owner, ttl]);
    if (!r.rows[0]) return false;
    this.expiresAt = num(r.rows[0].expires_at);
    return true;
  }

  async release(): Promise<boolean> {
    this.ctx.guard();
    const r = await this.ctx.exec.run(this.ctx.sql.lock.release, [this.name, this.owner]);
    return r.rowCount > 0;
  }
}
