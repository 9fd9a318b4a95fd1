// PostgreSQL: which queues take the limited claim, the keyed enqueue, and the limits' settings (docs/limits.md).
import type { ResolvedLimits } from '../../contract/limits.js';
import type { JobWrite } from '../../contract/options.js';
import type { PgContext } from './context.js';
import type { Executor } from './connection.js';
import { limitSettings, type LimitColumns } from '../shared/limits.js';

/** Per store: queues whose last claim read limits (their next claim is the limited one). */
const LIMITED = new WeakMap<object, Set<string>>();

/** The queues of `ctx`'s store known to have limits. */
export function limitedQueues(ctx: object): Set<string> {
  let s = LIMITED.get(ctx);
  if (s === undefined) {
    s = new Set();
    LIMITED.set(ctx, s);
  }
  return s;
}

/** Parameters $16, $17 of the limited enqueue. */
export function limitKeyParams(st: JobWrite): unknown[] {
  return [st.concurrencyKey, st.rateLimitKey];
}

/** Parameters $2..$8 of `setLimits`. */
export function setLimitsParams(l: ResolvedLimits): unknown[] {
  return [
    l.concurrencyLimit !== undefined,
    l.concurrencyLimit ?? null,
    l.globalConcurrency !== undefined,
    l.globalConcurrency ?? null,
    l.keyRateLimit !== undefined,
    l.keyRateLimit?.max ?? null,
    l.keyRateLimit?.perMs ?? null,
  ];
}

/**
 * Deletes the ended per-key rate windows of `queue`, or of every queue when null (they would read
 * as empty anyway): the part of `sweepExpired` and of the retention runner's round that keeps the
 * windows table to the keys of running periods. Resolves to the rows deleted.
 */
export async function sweepRateWindows(ctx: PgContext, exec: Executor, queue: string | null): Promise<number> {
  const r =
    queue === null
      ? await exec.run<{ n: string }>(ctx.sql.limits.sweepAllWindows, [])
      : await exec.run<{ n: string }>(ctx.sql.limits.sweepWindows, [queue]);
  return Number(r.rows[0]?.n ?? 0);
}

/** The limit fields of `QueueSettings`. */
export async function readLimits(
  ctx: PgContext,
  exec: Executor,
  queue: string,
): Promise<ReturnType<typeof limitSettings>> {
  const r = await exec.run<LimitColumns & { key_rate_per_ms: string | null }>(ctx.sql.limits.getLimits, [queue]);
  return limitSettings(r.rows[0]);
}
