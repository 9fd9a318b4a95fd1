import { InvalidArgument } from '../contract/errors.js';
import { requireDurationMs } from '../contract/validate.js';

/** A duration: milliseconds, or text such as `'3 days'`, `'90s'`, `'1.5 hours'`, `'250 ms'`. */
export type Duration = number | string;

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
  weeks: 604_800_000,
};

const TEXT = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i;

/**
 * Milliseconds of a {@link Duration} (a fraction of a millisecond rounds up, so a sleep never ends early).
 * @throws InvalidArgument naming `argument` for text that is not `<number> <unit>` or a number out of range.
 */
export function durationMs(argument: string, d: unknown, opts: { allowZero?: boolean } = {}): number {
  if (typeof d === 'number') return requireDurationMs(argument, d, opts);
  if (typeof d !== 'string')
    throw new InvalidArgument(
      argument,
      `must be milliseconds or text such as '3 days', got ${d === null ? 'null' : typeof d}`,
    );
  const m = TEXT.exec(d);
  const unit = m ? UNIT_MS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined)
    throw new InvalidArgument(
      argument,
      `must be '<number> <unit>' with unit ms, s, m, h, d or w (e.g. '3 days'), got ${JSON.stringify(d.slice(0, 40))}`,
    );
  return requireDurationMs(argument, Math.ceil(Number(m[1]) * unit), opts);
}
