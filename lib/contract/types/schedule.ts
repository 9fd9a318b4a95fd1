// Schedules and the scheduler runner.

/**
 * What a schedule does with boundaries that elapsed while no runner fired them
 * (SPEC §10): `'all'` enqueues each of them, at most 64, then skips forward;
 * `'latest'` enqueues one and skips forward; `'none'` skips forward without
 * firing, except that a runner reaching the oldest missed boundary within
 * {@link CATCH_UP_GRACE_MS} (60 s) still fires it once.
 */
export type CatchUpPolicy = 'all' | 'latest' | 'none';

/** Options of a schedule, and what is stamped on every job it fires. */
export interface ScheduleOpts {
  priority?: number;
  maxAttempts?: number;
  expiresInMs?: number;
  /**
   * First boundary (epoch ms). `@every`: that instant; cron: the first matching instant at or after it.
   * Default: now + interval (`@every`), the first matching instant after now (cron).
   * Ignored on an upsert that keeps the same spec and zone.
   */
  startAt?: number;
  /** IANA time zone the cron expression is read in (default `UTC`). `@every` ignores it. */
  timeZone?: string;
  /** What to do with boundaries missed while no runner fired them (default `'all'`). */
  catchUp?: CatchUpPolicy;
  /**
   * Marks the schedule as owned by code (the Nest module uses `alkstore:nest`): whoever
   * owns it may remove it once the code that declared it is gone. Default null: nothing
   * but an explicit `unschedule` removes it.
   */
  owner?: string | null;
}

/** A stored schedule. */
export interface Schedule {
  readonly name: string;
  readonly spec: string;
  /** The `@every` interval (ms); null for a cron expression. */
  readonly intervalMs: number | null;
  /** IANA zone the spec is read in (`UTC` unless set). */
  readonly timeZone: string;
  readonly catchUp: CatchUpPolicy;
  readonly queue: string;
  readonly payload: unknown;
  readonly priority: number;
  readonly maxAttempts: number | null;
  readonly expiresInMs: number | null;
  /** Next boundary to fire (epoch ms). While paused, the runner moves it forward without firing. */
  readonly nextFireAt: number;
  /** Paused by an operator: the runner fires nothing until `resumeSchedule`. Upserts keep it. */
  readonly paused: boolean;
  /** The code that owns the schedule (see {@link ScheduleOpts.owner}); null when created by hand. */
  readonly owner: string | null;
}

/** The holder of the scheduler's leadership lock `__alkstore_scheduler`. */
export interface SchedulerLeader {
  /** The runner's owner id (`RunSchedulesOpts.owner`; the Nest module uses its `workerId`). */
  readonly owner: string;
  /** When its lock lapses unless renewed (epoch ms, database clock). */
  readonly expiresAt: number;
}

/** One consistent view of the schedules, for operators (`store.listSchedules()`). */
export interface ScheduleListing {
  /** The database clock when the listing was read. */
  readonly now: number;
  /** The runner currently leading, or null when no runner holds an unexpired lock. */
  readonly leader: SchedulerLeader | null;
  /** Every schedule, by name. */
  readonly schedules: Schedule[];
}

/** Options of `runSchedules`. */
export interface RunSchedulesOpts {
  /** Lock owner identity; default a random id per call. */
  owner?: string;
  /** Longest sleep between ticks when nothing is due, default 1000 ms. Also how often a standby retries the lock. */
  maxTickMs?: number;
  /**
   * TTL of the leadership lock (ms, default 60 000, at least 1000): after a crash, another runner
   * leads at most this long (plus one `maxTickMs`) after the leader's last renew.
   */
  lockTtlMs?: number;
  /** How often the leader renews its lock (ms, default 20 000); at most half of `lockTtlMs`. */
  renewIntervalMs?: number;
}
