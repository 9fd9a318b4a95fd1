import { InvalidArgument, InvalidSpec } from './errors.js';
import type { CatchUpPolicy } from './types.js';
import { instantOfWallTime, isTimeZone, transitionBetween, wallTimeOf, zoneOffsetMs } from './zone-time.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const EVERY = /^@every ([1-9][0-9]{0,9})([smhd])$/;

/** Latest instant alkstore stores (the largest `Date`); a schedule with no boundary left waits here. */
export const NEVER_MS = 8.64e15;

/** A parsed `@every` spec. */
export interface EverySpec {
  readonly spec: string;
  readonly intervalMs: number;
}

/**
 * Parses `@every <n><s|m|h|d>` with n > 0 (SPEC §7). Anything else, cron
 * strings included, throws {@link InvalidSpec}.
 */
export function parseEverySpec(spec: unknown): EverySpec {
  if (typeof spec !== 'string') throw new InvalidSpec(spec);
  const m = EVERY.exec(spec);
  if (!m) throw new InvalidSpec(spec);
  const intervalMs = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (!Number.isSafeInteger(intervalMs)) throw new InvalidSpec(spec);
  return { spec, intervalMs };
}

/** Most boundaries one runner tick enqueues before skipping forward. */
export const SCHEDULE_CATCH_UP_CAP = 64;

/**
 * With catch-up `'none'`, a runner that reaches the oldest missed boundary at
 * most this late (ms) still fires it once: a deploy or a failover of a few
 * seconds does not cost a nightly run. Later than that, nothing fires.
 */
export const CATCH_UP_GRACE_MS = 60_000;

/** The catch-up policies (SPEC §10). */
export const CATCH_UP_POLICIES: readonly CatchUpPolicy[] = Object.freeze(['all', 'latest', 'none']);

/**
 * Pure catch-up arithmetic: given the stored next fire time, the interval and
 * now, returns the boundaries to enqueue (at most 64) and the next fire time.
 * More than 64 elapsed boundaries: enqueue 64 and skip forward past now.
 */
export function dueBoundaries(
  nextFireAt: number,
  intervalMs: number,
  now: number,
): { fires: number[]; nextFireAt: number } {
  if (nextFireAt > now) return { fires: [], nextFireAt };
  const elapsed = Math.floor((now - nextFireAt) / intervalMs) + 1;
  const count = Math.min(elapsed, SCHEDULE_CATCH_UP_CAP);
  const fires: number[] = [];
  for (let i = 0; i < count; i++) fires.push(nextFireAt + i * intervalMs);
  // Skip forward: the first boundary strictly after now.
  return { fires, nextFireAt: nextFireAt + elapsed * intervalMs };
}

/**
 * A validated schedule spec in its zone: `@every <n><unit>` or a cron
 * expression (5 fields, or 6 with seconds first; names, lists, ranges, steps,
 * `@yearly @monthly @weekly @daily @hourly`). Cron expressions are parsed and
 * stepped by croner; the zone and SPEC §10's DST rule are applied here.
 */
export interface ScheduleSpec {
  readonly spec: string;
  readonly timeZone: string;
  /** The `@every` interval; null for cron. */
  readonly intervalMs: number | null;
  /**
   * The first boundary strictly after `instant` (epoch ms), or null when none
   * is left. `@every` has no boundaries of its own: its grid is anchored at the
   * schedule's first fire, so this is `instant + interval`.
   */
  nextAfter(instant: number): number | null;
}

/** What alkstore uses of a cron library: a pattern stepped over UTC (no DST), one second at the finest. */
export interface CronStepper {
  /** The first matching instant strictly after `after`, or null when none is left (croner stops at year 9999). */
  nextRun(after: Date): Date | null;
}

/** Compiles a 5- or 6-field expression (or a nickname); throws the library's error on a malformed one. */
export type CronCompiler = (expression: string) => CronStepper;

/**
 * Whether validating `spec` in `timeZone` needs a cron compiler: a plausible
 * cron expression in a known zone (`@every` specs and specs refused anyway do not).
 */
export function needsCronCompiler(spec: unknown, timeZone: unknown = 'UTC'): boolean {
  return typeof spec === 'string' && !spec.startsWith('@every') && isPlausibleCron(spec) && isTimeZone(timeZone);
}

/**
 * Validates `spec` in `timeZone` (default `UTC`). A malformed expression, one
 * that never fires, or an unknown zone is {@link InvalidSpec} naming it.
 * `cron` is asked for a compiler only for a cron expression, so `@every`
 * specs need none; whoever loads the cron library passes it in (this module
 * holds no state and loads nothing).
 */
export function compileScheduleSpec(spec: unknown, timeZone: unknown, cron: () => CronCompiler): ScheduleSpec {
  if (typeof spec !== 'string' || spec.length === 0 || spec.length > 256) throw new InvalidSpec(spec);
  if (!isTimeZone(timeZone)) {
    throw new InvalidSpec(
      spec,
      `has time zone ${JSON.stringify(timeZone) ?? String(timeZone)}, which is not an IANA time zone name known to this platform (e.g. "UTC", "Europe/Berlin")`,
    );
  }
  if (spec.startsWith('@every')) {
    const { intervalMs } = parseEverySpec(spec);
    return { spec, timeZone, intervalMs, nextAfter: (instant) => instant + intervalMs };
  }
  if (!isPlausibleCron(spec)) throw new InvalidSpec(spec);
  const stepper = compileCron(cron(), spec);
  const parsed: ScheduleSpec = {
    spec,
    timeZone,
    intervalMs: null,
    nextAfter: (instant) => nextCronFire(stepper, spec, timeZone, instant),
  };
  if (parsed.nextAfter(Date.UTC(2000, 0, 1)) === null)
    throw new InvalidSpec(spec, 'matches no date (e.g. February 30)');
  return parsed;
}

// croner reads a string with a colon as a one-shot date, and 7 fields as a year: neither is a spec here.
function isPlausibleCron(spec: string): boolean {
  return !spec.includes(':') && spec.trim() === spec;
}

function compileCron(compile: CronCompiler, spec: string): CronStepper {
  try {
    return compile(spec);
  } catch (err) {
    throw new InvalidSpec(
      spec,
      `is not a valid cron expression: ${err instanceof Error ? err.message.replace(/^CronPattern: /, '') : String(err)}`,
    );
  }
}

/**
 * The first instant strictly after `after` whose wall-clock time in `zone`
 * matches the expression, with SPEC §10's DST rule. croner steps the
 * expression over wall-clock fields (as if in UTC, where no wall time is
 * missing or repeated); each matching wall time maps to its first occurrence,
 * or to the end of the gap when it does not exist. Several wall times in one
 * gap map to the same instant, so they fire once.
 */
function nextCronFire(stepper: CronStepper, spec: string, zone: string, after: number): number | null {
  let wall = wallTimeOf(zone, after);
  const firstOccurrence = instantOfWallTime(zone, wall);
  if (firstOccurrence < after) {
    // `after` is in the second pass of a repeated hour: those wall times already fired on the first pass.
    const end = transitionBetween(zone, firstOccurrence, after);
    wall = end + zoneOffsetMs(zone, firstOccurrence) - 1;
  }
  for (let guard = 0; guard < 1_000; guard++) {
    const next = stepper.nextRun(new Date(wall));
    if (next === null) return null;
    const instant = instantOfWallTime(zone, next.getTime());
    if (instant > after) return instant <= NEVER_MS ? instant : null;
    wall = next.getTime();
  }
  throw new InvalidSpec(spec, `found no boundary after ${after} within 1000 steps in zone ${JSON.stringify(zone)}`);
}

/** What one runner tick does with a due schedule. */
export interface DueFires {
  /** Jobs to enqueue now (0 when paused, or skipped by the catch-up policy). */
  readonly count: number;
  /** The schedule's next fire after this tick, strictly after now (NEVER_MS when none is left). */
  readonly nextFireAt: number;
}

/** {@link DueFires} with the boundary instant of each job to enqueue, oldest first. */
export interface DueBoundaries {
  /** One entry per job to enqueue: the boundary (epoch ms) it fires for. */
  readonly boundaries: readonly number[];
  /** The schedule's next fire after this tick, strictly after now (NEVER_MS when none is left). */
  readonly nextFireAt: number;
}

/**
 * Pure catch-up logic of one tick (SPEC §7 and §10) for a schedule whose
 * stored next fire is `nextFireAt`, at database time `now`.
 */
export function dueFires(
  spec: ScheduleSpec,
  nextFireAt: number,
  now: number,
  catchUp: CatchUpPolicy,
  paused = false,
): DueFires {
  const due = dueFireBoundaries(spec, nextFireAt, now, catchUp, paused);
  return { count: due.boundaries.length, nextFireAt: due.nextFireAt };
}

/**
 * {@link dueFires} naming each fire's boundary: `'all'` fires the elapsed
 * boundaries oldest first (at most 64); `'latest'`, and `'none'` within its
 * grace, fire once for the latest elapsed boundary.
 */
export function dueFireBoundaries(
  spec: ScheduleSpec,
  nextFireAt: number,
  now: number,
  catchUp: CatchUpPolicy,
  paused = false,
): DueBoundaries {
  if (nextFireAt > now) return { boundaries: [], nextFireAt };
  if (spec.intervalMs !== null) {
    const every = dueBoundaries(nextFireAt, spec.intervalMs, now);
    if (paused) return { boundaries: [], nextFireAt: every.nextFireAt };
    if (catchUp === 'all') return { boundaries: every.fires, nextFireAt: every.nextFireAt };
    return {
      boundaries: firesOnce(catchUp, nextFireAt, now) ? [every.nextFireAt - spec.intervalMs] : [],
      nextFireAt: every.nextFireAt,
    };
  }
  const skip = (): number => spec.nextAfter(now) ?? NEVER_MS;
  if (paused) return { boundaries: [], nextFireAt: skip() };
  if (catchUp !== 'all')
    return {
      boundaries: firesOnce(catchUp, nextFireAt, now) ? [latestBoundary(spec, nextFireAt, now)] : [],
      nextFireAt: skip(),
    };
  const boundaries = [nextFireAt];
  let boundary: number | null = nextFireAt;
  while (boundaries.length < SCHEDULE_CATCH_UP_CAP) {
    boundary = spec.nextAfter(boundary);
    if (boundary === null) return { boundaries, nextFireAt: NEVER_MS };
    if (boundary > now) return { boundaries, nextFireAt: boundary };
    boundaries.push(boundary);
  }
  return { boundaries, nextFireAt: skip() };
}

/** `'latest'` fires once; `'none'` once only when the oldest missed boundary is within the grace. */
function firesOnce(catchUp: Exclude<CatchUpPolicy, 'all'>, oldest: number, now: number): boolean {
  return catchUp === 'latest' || now - oldest <= CATCH_UP_GRACE_MS;
}

/**
 * The last cron boundary at or before `now`, given `oldest`, a boundary at or
 * before `now`. A bisection over "the first boundary after t" (at most ~50
 * steps however many boundaries elapsed): `lo` is always a boundary, and no
 * boundary lies in (hi, now].
 */
function latestBoundary(spec: ScheduleSpec, oldest: number, now: number): number {
  let lo = oldest;
  let hi = now;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const b = spec.nextAfter(mid);
    if (b !== null && b <= hi) lo = b;
    else hi = mid;
  }
  return lo;
}

/** Validates a catch-up policy option (default `'all'`). */
export function parseCatchUp(value: unknown): CatchUpPolicy {
  if (value === undefined) return 'all';
  if (typeof value === 'string' && (CATCH_UP_POLICIES as readonly string[]).includes(value))
    return value as CatchUpPolicy;
  throw new InvalidArgument('catchUp', 'must be one of "all", "latest", "none"');
}

/**
 * A new schedule's first boundary at database time `now`: `startAt` itself for
 * `@every` (default now + interval); for cron the first matching instant at or
 * after `startAt` (default: strictly after now). NEVER_MS when none is left.
 */
export function firstFireAt(spec: ScheduleSpec, now: number, startAt: number | null): number {
  if (spec.intervalMs !== null) return startAt ?? now + spec.intervalMs;
  return (startAt === null ? spec.nextAfter(now) : spec.nextAfter(startAt - 1)) ?? NEVER_MS;
}
