import { parseScheduleSpec } from '../../internal/load-cron.js';
import type { Store, StoreLogger } from '../../contract/types.js';
import type { DiscoveredScheduled } from '../alkstore.explorer.js';
import { InvalidHandler } from '../errors/invalid-handler.error.js';

/** The owner marker of schedules the Nest module declares from decorators, unless `scheduleOwner` says otherwise. */
export const DEFAULT_SCHEDULE_OWNER = 'alkstore:nest';

/** Validates every discovered spec in its zone (loading croner for cron specs); a bad one fails startup naming the method. */
export async function validateScheduledSpecs(scheduled: readonly DiscoveredScheduled[]): Promise<void> {
  for (const s of scheduled) {
    try {
      await parseScheduleSpec(s.meta.spec, s.meta.options.timeZone ?? 'UTC');
    } catch (err) {
      throw new InvalidHandler(
        `${s.label} (${s.source ?? '@Scheduled'}): ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }
}

/**
 * Upserts the schedule of every discovered method, marked as owned by `owner`,
 * then removes schedules marked with the same owner whose method is gone
 * (logged once, by the replica that removed it). Schedules created with
 * `store.schedule()` carry no owner and are never touched.
 */
export async function syncSchedules(
  store: Store,
  scheduled: readonly DiscoveredScheduled[],
  owner: string,
  logger: StoreLogger,
): Promise<void> {
  for (const s of scheduled) {
    const { priority, maxAttempts, expiresInMs, payload, timeZone, catchUp } = s.meta.options;
    await store.schedule(s.meta.name, s.meta.spec, s.queue, payload ?? null, {
      priority,
      maxAttempts,
      expiresInMs,
      timeZone,
      catchUp,
      owner,
    });
  }
  const declared = new Set(scheduled.map((s) => s.meta.name));
  const { schedules } = await store.listSchedules();
  for (const orphan of schedules) {
    if (orphan.owner !== owner || declared.has(orphan.name)) continue;
    if (await store.unschedule(orphan.name)) {
      logger.log(
        `removed schedule ${JSON.stringify(orphan.name)} (${orphan.spec}): no method of this application declares it any more`,
      );
    }
  }
}
