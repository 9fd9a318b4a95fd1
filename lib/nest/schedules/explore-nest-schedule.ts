import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { Job } from '../../contract/types.js';
import { SCHEDULED_METADATA, SCHEDULED_QUEUE_PREFIX } from '../alkstore.constants.js';
import { InvalidHandler } from '../errors/invalid-handler.error.js';
import { SchedulerConflict } from '../errors/scheduler-conflict.error.js';
import type { DiscoveredScheduled } from '../alkstore.explorer.js';
import { instanceMethods } from '../utils/discovered-methods.js';
import {
  NEST_SCHEDULE_CRON_OPTIONS,
  NEST_SCHEDULE_INTERVAL_OPTIONS,
  NEST_SCHEDULE_MODULE_OPTIONS,
  NEST_SCHEDULE_TIMEOUT_OPTIONS,
  NEST_SCHEDULER_NAME,
  type NestCronMetadata,
} from './nest-schedule.constants.js';

/** A `@Timeout(ms)` method: under the takeover it still runs once per process, `ms` after bootstrap. */
export interface DiscoveredTimeout {
  readonly label: string;
  readonly timeoutMs: number;
  readonly call: () => Promise<unknown>;
}

/** What the takeover found on the application's providers. */
export interface NestScheduleMethods {
  readonly scheduled: DiscoveredScheduled[];
  readonly timeouts: DiscoveredTimeout[];
}

function metadata(key: string, method: unknown): unknown {
  return typeof method === 'function' ? (Reflect.getMetadata(key, method) as unknown) : undefined;
}

/**
 * `nestSchedule: 'cluster'`: reads `@Cron` and `@Interval` methods of
 * `@nestjs/schedule` and turns each into a schedule fired once per boundary
 * across every replica (named like the job, or `Class.method` when unnamed),
 * with catch-up `'none'`, as `@nestjs/schedule` never runs a missed tick.
 * `@Timeout` methods stay per process. Fails startup when `ScheduleModule` is
 * imported as well, or when a method is ambiguous.
 */
export function exploreNestSchedule(discovery: DiscoveryService, scanner: MetadataScanner): NestScheduleMethods {
  const providers = discovery.getProviders();
  if (providers.some((w) => w.token === NEST_SCHEDULE_MODULE_OPTIONS)) {
    throw new SchedulerConflict(
      "AlkstoreModule has nestSchedule: 'cluster' and ScheduleModule.forRoot() is imported too: @Cron and " +
        '@Interval methods would run on every replica as well. Remove ScheduleModule.forRoot() (alkstore runs ' +
        '@Timeout methods per process in its place), or drop nestSchedule.',
    );
  }
  const scheduled: DiscoveredScheduled[] = [];
  const timeouts: DiscoveredTimeout[] = [];
  for (const { wrapper, instance, label, method } of instanceMethods(discovery, scanner)) {
    const cron = metadata(NEST_SCHEDULE_CRON_OPTIONS, method) as NestCronMetadata | undefined;
    const interval = metadata(NEST_SCHEDULE_INTERVAL_OPTIONS, method) as { timeout?: unknown } | undefined;
    const timeout = metadata(NEST_SCHEDULE_TIMEOUT_OPTIONS, method) as { timeout?: unknown } | undefined;
    const kinds = [cron && '@Cron', interval && '@Interval', timeout && '@Timeout'].filter(
      (k): k is string => typeof k === 'string',
    );
    if (kinds.length === 0) continue;
    const own = (metadata(SCHEDULED_METADATA, method) as unknown[] | undefined) ?? [];
    if (kinds.length > 1 || own.length > 0) {
      const all = own.length > 0 ? [...kinds, '@Scheduled'] : kinds;
      throw new InvalidHandler(
        `${label} is ambiguous: it carries ${all.join(' and ')}; give each schedule its own method`,
      );
    }
    if (!wrapper.isDependencyTreeStatic()) {
      throw new InvalidHandler(
        `${label}: ${kinds[0]} methods cannot live on request-scoped (or transient-dependent) providers`,
      );
    }
    const fn = method as () => unknown;
    const call = async (): Promise<unknown> => fn.call(instance);
    const named = metadata(NEST_SCHEDULER_NAME, method);
    const name = typeof named === 'string' && named.length > 0 ? named : label;
    if (timeout) {
      timeouts.push({ label, timeoutMs: positiveMs(label, '@Timeout', timeout.timeout), call });
      continue;
    }
    const spec = cron ? cronSpec(label, cron) : everySpec(label, interval!.timeout);
    if (spec === null) continue;
    scheduled.push({
      label,
      call: (_job: Job) => call(),
      meta: {
        name,
        spec,
        options: { catchUp: 'none', ...(cron && typeof cron.timeZone === 'string' ? { timeZone: cron.timeZone } : {}) },
      },
      queue: `${SCHEDULED_QUEUE_PREFIX}${name}`,
      source: kinds[0] as '@Cron' | '@Interval',
    });
  }
  return { scheduled, timeouts };
}

/** The spec of a `@Cron` method, or null when it is `disabled`. */
function cronSpec(label: string, cron: NestCronMetadata): string | null {
  if (cron.disabled === true) return null;
  if (typeof cron.cronTime !== 'string') {
    throw new InvalidHandler(
      `${label}: @Cron with a Date or DateTime (a one-shot run) cannot be taken over; use a cron expression, or @Timeout`,
    );
  }
  if (cron.utcOffset !== undefined) {
    throw new InvalidHandler(
      `${label}: @Cron with utcOffset cannot be taken over; use timeZone with an IANA name (e.g. "Europe/Berlin")`,
    );
  }
  if (cron.timeZone !== undefined && typeof cron.timeZone !== 'string') {
    throw new InvalidHandler(`${label}: @Cron timeZone must be an IANA time zone name`);
  }
  return cron.cronTime;
}

/** `@Interval(ms)` as `@every <n>s`: the cluster scheduler counts whole seconds. */
function everySpec(label: string, timeout: unknown): string {
  const ms = positiveMs(label, '@Interval', timeout);
  if (ms % 1000 !== 0) {
    throw new InvalidHandler(
      `${label}: @Interval(${ms}) under nestSchedule: 'cluster' must be a whole number of seconds (a multiple of 1000 ms)`,
    );
  }
  return `@every ${ms / 1000}s`;
}

function positiveMs(label: string, decorator: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0 || value > 2 ** 31 - 1) {
    throw new InvalidHandler(`${label}: ${decorator} needs a positive integer number of milliseconds up to 2^31-1`);
  }
  return value;
}
