import { InvalidArgument } from './errors.js';
import type { RateLimit } from './types.js';
import { requireInt } from './validate.js';

const MAX_INT32 = 2 ** 31 - 1;

function int32(field: string, v: unknown): number {
  return requireInt(field, v, 1, MAX_INT32);
}

/** Validates a rate limit argument (`null` removes it): {@link InvalidArgument} naming the field, before any I/O. */
export function resolveRateLimit(limit: RateLimit | null | undefined): RateLimit | null {
  if (limit === null) return null;
  if (typeof limit !== 'object' || limit === undefined)
    throw new InvalidArgument(
      'rateLimit',
      `must be { max, perMs } or null, got ${limit === undefined ? 'undefined' : typeof limit}`,
    );
  return { max: int32('rateLimit.max', limit.max), perMs: int32('rateLimit.perMs', limit.perMs) };
}

/**
 * How many of `want` claims a rate-limited queue may hand out now, and the
 * window they count against. Windows are aligned to the epoch; a reading older
 * than the stored window counts against the stored one. Pure; the SQLite
 * engine calls it, the PostgreSQL claim statement computes the same in SQL.
 */
export function rateAllowance(
  limit: RateLimit,
  stored: { windowStart: number; windowCount: number },
  now: number,
  want: number,
): { window: number; used: number; allowed: number } {
  const window = Math.max(stored.windowStart, Math.floor(now / limit.perMs) * limit.perMs);
  const used = stored.windowStart === window ? stored.windowCount : 0;
  return { window, used, allowed: Math.max(0, Math.min(want, limit.max - used)) };
}
