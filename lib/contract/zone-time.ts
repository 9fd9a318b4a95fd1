/**
 * Wall-clock arithmetic in IANA time zones, on the platform's `Intl` data.
 * A cron expression is matched against wall-clock fields; these functions map
 * a wall time to the instant it fires at, with the DST rule of SPEC §10:
 * a wall time that does not exist maps to the first instant after the gap,
 * a repeated wall time to its first occurrence.
 *
 * A "wall time" here is a number: the epoch milliseconds the same calendar
 * fields would have in UTC (so 03:00 local is `Date.UTC(..., 3, 0)`).
 */

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** True for an IANA zone name the platform knows (`UTC`, `Europe/Berlin`); offsets such as `+02:00` are not names. */
export function isTimeZone(zone: unknown): zone is string {
  if (typeof zone !== 'string' || !ZONE_NAME.test(zone)) return false;
  try {
    formatter(zone);
    return true;
  } catch {
    return false;
  }
}

/** The zone's offset from UTC at `instant` (ms; Berlin in summer: 7 200 000). */
export function zoneOffsetMs(zone: string, instant: number): number {
  if (zone === 'UTC') return 0;
  const second = Math.floor(instant / 1000) * 1000;
  const f: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(second)) if (p.type !== 'literal') f[p.type] = Number(p.value);
  const asUtc = new Date(0);
  asUtc.setUTCFullYear(f.year!, f.month! - 1, f.day!);
  asUtc.setUTCHours(f.hour!, f.minute!, f.second!, 0);
  return asUtc.getTime() - second;
}

/** The wall time at `instant` in `zone`. */
export function wallTimeOf(zone: string, instant: number): number {
  return instant + zoneOffsetMs(zone, instant);
}

/**
 * The instant a wall time fires at: its first occurrence, or, when the wall
 * time falls in a DST gap, the first instant after the gap.
 */
export function instantOfWallTime(zone: string, wall: number): number {
  if (zone === 'UTC') return wall;
  const before = zoneOffsetMs(zone, wall - DAY_MS);
  const after = zoneOffsetMs(zone, wall + DAY_MS);
  let first: number | null = null;
  for (const offset of before === after ? [before] : [before, after]) {
    const t = wall - offset;
    if (zoneOffsetMs(zone, t) === offset && (first === null || t < first)) first = t;
  }
  if (first !== null) return first;
  // In a gap (the clock jumped from `before` to a larger `after`): find the jump.
  return transitionBetween(zone, wall - Math.max(before, after), wall - Math.min(before, after));
}

/**
 * The first instant in (lo, hi] whose offset differs from the offset at lo,
 * to the second (tz transitions fall on whole seconds); hi if none.
 */
export function transitionBetween(zone: string, lo: number, hi: number): number {
  const start = zoneOffsetMs(zone, lo);
  let a = Math.floor(lo / 1000);
  let b = Math.ceil(hi / 1000);
  if (zoneOffsetMs(zone, b * 1000) === start) return hi;
  while (b - a > 1) {
    const mid = Math.floor((a + b) / 2);
    if (zoneOffsetMs(zone, mid * 1000) === start) a = mid;
    else b = mid;
  }
  return b * 1000;
}
