/** Upper bound of any computed retry delay: one hour. */
export const MAX_BACKOFF_MS = 3_600_000;

/**
 * The exponential cap for an attempt: `min(baseMs * 2^(attempts-1), 3 600 000)`.
 * @throws RangeError when `attempts` is not a positive integer or `baseMs` is negative or not finite.
 */
export function backoffCapMs(attempts: number, baseMs: number): number {
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError(`attempts must be a positive integer, got ${attempts}`);
  if (!Number.isFinite(baseMs) || baseMs < 0) throw new RangeError(`backoffBaseMs must be a finite number >= 0, got ${baseMs}`);
  // 2^(attempts-1) overflows to Infinity for huge attempt counts; min() clamps it.
  return Math.min(baseMs * 2 ** (attempts - 1), MAX_BACKOFF_MS);
}

/**
 * Equal-jitter exponential backoff (SPEC §5), pure and clock-free:
 * `delay = floor(cap/2 + random * cap/2)` with `random` in [0, 1).
 * Both engines call this one function, so their arithmetic is identical.
 */
export function backoffDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const cap = backoffCapMs(attempts, baseMs);
  const r = random();
  if (!(r >= 0 && r < 1)) throw new RangeError(`random must return a number in [0, 1), got ${r}`);
  return Math.floor(cap / 2 + (r * cap) / 2);
}

/** The range a retry delay falls in: `[floor(cap/2), cap]` (the upper end is reached only as random → 1). */
export function backoffRangeMs(attempts: number, baseMs: number): { min: number; max: number } {
  const cap = backoffCapMs(attempts, baseMs);
  return { min: Math.floor(cap / 2), max: cap };
}
