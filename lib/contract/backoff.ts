import { InvalidArgument } from './errors.js';
import { requireFunction, requireRandomDraw } from './validate.js';

/** Upper bound of any computed retry delay: one hour. */
export const MAX_BACKOFF_MS = 3_600_000;

/**
 * The exponential cap for an attempt: `min(baseMs * 2^(attempts-1), 3 600 000)`.
 * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming `attempts` when it is not a
 *   positive integer, or `baseMs` when it is negative or not a finite number.
 */
export function backoffCapMs(attempts: number, baseMs: number): number {
  // Any positive integer is accepted, not only safe ones: 2^(attempts-1) overflows to Infinity and min() clamps it.
  if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < 1) {
    throw new InvalidArgument('attempts', `must be a positive integer, got ${describeNumber(attempts)}`);
  }
  if (typeof baseMs !== 'number' || !Number.isFinite(baseMs) || baseMs < 0) {
    throw new InvalidArgument('baseMs', `must be a finite number >= 0, got ${describeNumber(baseMs)}`);
  }
  return Math.min(baseMs * 2 ** (attempts - 1), MAX_BACKOFF_MS);
}

/**
 * Equal-jitter exponential backoff (SPEC §5), pure and clock-free:
 * `delay = floor(cap/2 + random * cap/2)` with `random` in [0, 1).
 * Both engines call this one function, so their arithmetic is identical.
 * @throws InvalidArgument naming `attempts` or `baseMs` (see {@link backoffCapMs}), or `random` when it is
 *   not a function or returns anything but a number in [0, 1) (the store's `random` option reaches here).
 */
export function backoffDelayMs(attempts: number, baseMs: number, random: () => number = Math.random): number {
  const cap = backoffCapMs(attempts, baseMs);
  const r = requireRandomDraw('random', requireFunction<() => number>('random', random)());
  return Math.floor(cap / 2 + (r * cap) / 2);
}

/**
 * The range a retry delay falls in: `[floor(cap/2), cap]` (the upper end is reached only as random → 1).
 * @throws InvalidArgument naming `attempts` or `baseMs` (see {@link backoffCapMs}).
 */
export function backoffRangeMs(attempts: number, baseMs: number): { min: number; max: number } {
  const cap = backoffCapMs(attempts, baseMs);
  return { min: Math.floor(cap / 2), max: cap };
}

/** A number as the message shows it; any other value by its type only. */
function describeNumber(v: unknown): string {
  if (typeof v === 'number') return String(v);
  return v === null ? 'null' : typeof v;
}
