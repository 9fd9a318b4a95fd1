import type { JobHeaders } from './job-extras.js';

/** Header naming the schedule that enqueued a job. */
export const SCHEDULE_NAME_HEADER = 'alkstore-schedule';

/**
 * Header carrying the boundary a scheduled job fires for: the instant (epoch
 * milliseconds, database clock, as a decimal string) of the spec's boundary.
 * Each job of a catch-up burst carries its own boundary; a `triggerSchedule`
 * run carries the database time of the trigger.
 */
export const SCHEDULE_BOUNDARY_HEADER = 'alkstore-schedule-boundary';

/** The headers stamped on a job that `schedule` fires for `boundary`. */
export function scheduleHeaders(schedule: string, boundary: number): JobHeaders {
  return { [SCHEDULE_NAME_HEADER]: schedule, [SCHEDULE_BOUNDARY_HEADER]: String(boundary) };
}

/**
 * The boundary (epoch ms) a scheduled job fires for, or null for a job no
 * schedule enqueued. A handler uses it to know which period it runs for, e.g.
 * to make a catch-up burst of 25 hourly jobs report 25 different hours:
 *
 * ```ts
 * const boundary = scheduleBoundaryOf(job); // 1764547200000
 * ```
 */
export function scheduleBoundaryOf(job: { readonly headers: JobHeaders }): number | null {
  const text = job.headers[SCHEDULE_BOUNDARY_HEADER];
  if (text === undefined || !/^[0-9]{1,16}$/.test(text)) return null;
  return Number(text);
}
