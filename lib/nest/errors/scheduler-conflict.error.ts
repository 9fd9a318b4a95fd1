import { AlkstoreError } from '../../contract/errors.js';

/**
 * `nestSchedule: 'cluster'` and `ScheduleModule.forRoot()` are both imported:
 * every `@Cron` method would run once per boundary across the cluster and once
 * per replica besides. Thrown at startup.
 */
export class SchedulerConflict extends AlkstoreError {
  constructor(message: string) {
    super('INVALID_OPTION', message);
  }
}
