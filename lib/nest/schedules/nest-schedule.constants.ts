/**
 * The metadata keys `@nestjs/schedule` writes with `SetMetadata` on a
 * decorated method (its `schedule.constants`). Reading them directly means
 * the takeover never imports `@nestjs/schedule`: the application's own
 * decorators are all it needs.
 */
export const NEST_SCHEDULE_CRON_OPTIONS = 'SCHEDULE_CRON_OPTIONS';
export const NEST_SCHEDULE_INTERVAL_OPTIONS = 'SCHEDULE_INTERVAL_OPTIONS';
export const NEST_SCHEDULE_TIMEOUT_OPTIONS = 'SCHEDULE_TIMEOUT_OPTIONS';
export const NEST_SCHEDULER_NAME = 'SCHEDULER_NAME';
/** The token of `ScheduleModule.forRoot()`'s options provider: present when that module is imported. */
export const NEST_SCHEDULE_MODULE_OPTIONS = 'SCHEDULE_MODULE_OPTIONS';

/** What `@Cron(cronTime, options)` records. */
export interface NestCronMetadata {
  readonly cronTime: unknown;
  readonly name?: string;
  readonly timeZone?: unknown;
  readonly utcOffset?: unknown;
  readonly disabled?: boolean;
}
