import { SCHEDULED_METADATA, SCHEDULED_QUEUE_PREFIX } from '../alkstore.constants.js';
import { declareHandle, recordHandlerSite } from '../alkstore.registry.js';
import type { ScheduledOptions } from '../interfaces/handler-options.interface.js';
import { appendMethodMetadata, composeMethodDecorators } from '../utils/append-metadata.js';

/**
 * Runs the method once per `spec` boundary across all replicas sharing the
 * database. `spec` is `@every <n><s|m|h|d>` or a cron expression (5 fields, or
 * 6 with seconds; names, steps, `@daily`…) read in `options.timeZone` (IANA,
 * default UTC). The schedule `name` is stored at bootstrap, marked as owned by
 * the application (removed once no method declares it), one leader-elected
 * runner enqueues each boundary on `scheduled:<name>` (or `options.queue`),
 * and a worker on that queue calls the method with the `Job`. A run that
 * throws is retried like any job. Names are unique per application.
 */
export function Scheduled(name: string, spec: string, options: ScheduledOptions = {}): MethodDecorator {
  const queue = options.queue ?? `${SCHEDULED_QUEUE_PREFIX}${name}`;
  declareHandle('queue', queue);
  return composeMethodDecorators(
    appendMethodMetadata(SCHEDULED_METADATA, { name, spec, options }),
    recordHandlerSite('queue', queue, `@Scheduled(${JSON.stringify(name)})`),
  );
}
