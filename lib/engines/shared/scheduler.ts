import { decodePayload } from '../../contract/codec.js';
import { resolveJobStamp, type JobOpts, type JobWrite, type QueueOpts } from '../../contract/options.js';
import { scheduleHeaders } from '../../contract/schedule-headers.js';
import { dueFireBoundaries, dueFires, NEVER_MS } from '../../contract/schedule-spec.js';
import { parseScheduleSpecSync } from '../../internal/load-cron.js';
import type { CatchUpPolicy, Schedule, ScheduleListing } from '../../contract/types.js';
import type { ScheduleInput } from '../../internal/schedule-input.js';
import { num, numOrNull } from './rows.js';

/** A schedule row as both engines read it (int8 columns as numbers, flags as booleans, the payload as JSON text). */
export interface StoredSchedule {
  name: string;
  spec: string;
  /** 0 for a cron spec. */
  intervalMs: number;
  timeZone: string;
  catchUp: CatchUpPolicy;
  queue: string;
  payloadText: string;
  priority: number;
  maxAttempts: number | null;
  expiresInMs: number | null;
  nextFireAt: number;
  paused: boolean;
  owner: string | null;
}

/** A schedule row's columns, with the engine's own types of its int8 (`I`) and boolean (`B`) columns. */
export interface ScheduleColumns<I, B> {
  name: string;
  spec: string;
  interval_ms: I;
  queue: string;
  payload: string;
  priority: number;
  max_attempts: number | null;
  expires_in_ms: I | null;
  next_fire_at: I;
  time_zone: string;
  catch_up: CatchUpPolicy;
  owner: string | null;
  paused: B;
}

/** A schedule row as either engine reads it: int8 as text or a number, the paused flag a boolean or 0/1. */
export type AnyScheduleRow = ScheduleColumns<string | number, boolean | number>;

/** A row read by either engine, its int8 and boolean columns converted. */
export function storedSchedule(r: AnyScheduleRow): StoredSchedule {
  return {
    name: r.name,
    spec: r.spec,
    intervalMs: num(r.interval_ms),
    timeZone: r.time_zone,
    catchUp: r.catch_up,
    queue: r.queue,
    payloadText: r.payload,
    priority: r.priority,
    maxAttempts: r.max_attempts,
    expiresInMs: numOrNull(r.expires_in_ms),
    nextFireAt: num(r.next_fire_at),
    paused: Boolean(r.paused),
    owner: r.owner,
  };
}

/** The public view of a row read by either engine. */
export function scheduleOf(r: AnyScheduleRow): Schedule {
  return toSchedule(storedSchedule(r));
}

/** The parameters of both engines' schedule upsert, in column order, with the first fire at `nextFireAt`. */
export function upsertParams(s: ScheduleInput, nextFireAt: number): unknown[] {
  const { parsed } = s;
  const head = [s.name, parsed.spec, parsed.intervalMs ?? 0, s.queue, s.payloadText, s.priority, s.maxAttempts];
  return [...head, s.expiresInMs, nextFireAt, parsed.timeZone, s.catchUp, s.owner];
}

/** The public view of a stored schedule. */
export function toSchedule(s: StoredSchedule): Schedule {
  return {
    name: s.name,
    spec: s.spec,
    intervalMs: s.intervalMs > 0 ? s.intervalMs : null,
    timeZone: s.timeZone,
    catchUp: s.catchUp,
    queue: s.queue,
    payload: decodePayload(s.payloadText, `payload of schedule ${JSON.stringify(s.name)}`),
    priority: s.priority,
    maxAttempts: s.maxAttempts,
    expiresInMs: s.expiresInMs,
    nextFireAt: s.nextFireAt,
    paused: s.paused,
    owner: s.owner,
  };
}

function specOf(s: StoredSchedule) {
  return parseScheduleSpecSync(s.spec, s.timeZone);
}

/**
 * What one tick does with a due schedule, against the database's `now`: the boundaries to fire
 * (as its catch-up policy allows; none while paused) and its next fire. Null: a spec with no
 * boundary left (`NEVER_MS`), left untouched.
 */
export function planFires(
  s: StoredSchedule,
  now: number,
): { boundaries: readonly number[]; nextFireAt: number } | null {
  if (s.nextFireAt >= NEVER_MS) return null;
  return dueFireBoundaries(specOf(s), s.nextFireAt, now, s.catchUp, s.paused);
}

/** The due rows of one tick, stored, each with its {@link planFires} (the rows it leaves untouched passed over). */
export function* duePlans(
  rows: readonly AnyScheduleRow[],
  now: number,
): Generator<{ s: StoredSchedule; boundaries: readonly number[]; nextFireAt: number }> {
  for (const row of rows) {
    const s = storedSchedule(row);
    const plan = planFires(s, now);
    if (plan !== null) yield { s, ...plan };
  }
}

/** Resume never fires what elapsed while paused: the next fire after now, or null when the stored one is still ahead. */
export function resumedNextFire(s: StoredSchedule, now: number): number | null {
  if (s.nextFireAt > now) return null;
  return dueFires(specOf(s), s.nextFireAt, now, s.catchUp, true).nextFireAt;
}

/** The job options a schedule stamps on its fires, over the queue's registered options. */
export function fireJobOpts(s: StoredSchedule): JobOpts {
  return { priority: s.priority, maxAttempts: s.maxAttempts ?? undefined, expiresInMs: s.expiresInMs ?? undefined };
}

/** The resolved stamp of one fire for `boundary` (SCHEDULE_BOUNDARY_HEADER in its headers). */
export function fireStamp(queueOpts: Required<QueueOpts>, s: StoredSchedule, boundary: number): JobWrite {
  return resolveJobStamp(queueOpts, { ...fireJobOpts(s), headers: scheduleHeaders(s.name, boundary) });
}

/** The schedule statements of one engine, each one transaction against the database clock. */
export interface ScheduleDriver {
  upsert(input: ScheduleInput): Promise<Schedule>;
  remove(name: string): Promise<boolean>;
  get(name: string): Promise<Schedule | null>;
  list(): Promise<ScheduleListing>;
  /** Sets the flag; clearing it also skips the boundaries that elapsed ({@link resumedNextFire}). */
  setPaused(name: string, paused: boolean): Promise<boolean>;
  /** One job for the boundary "now"; the next fire is unchanged. */
  trigger(name: string): Promise<number | null>;
  /**
   * One transaction: for every due schedule, enqueue {@link planFires}' boundaries and store its
   * next fire. Resolves to the database's now and the earliest next fire of any schedule.
   */
  fireDue(): Promise<{ now: number; nextFireAt: number | null }>;
  /** Wakes every runner's schedules receiver (after a leader releases its lock). */
  wake(): Promise<void>;
}
