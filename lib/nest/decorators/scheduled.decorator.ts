import { SCHEDULED_METADATA, SCHEDULED_QUEUE_PREFIX } from '../alkstore.constants.js';
import { declareHandle } from '../alkstore.registry.js';
import type { ScheduledOptions } from '../interfaces/handler-options.interface.js';
import { appendMethodMetadata } from '../utils/append-metadata.js';

/**
 * Runs the method once per `spec` boundary (`@every <n><s|m|h|d>`) across all
 * replicas sharing the database: the schedule `name` is stored at bootstrap,
 * one leader-elected runner enqueues each boundary on `scheduled:<name>` (or
 * `options.queue`), and a worker on that queue calls the method with the `Job`.
 * A run that throws is retried like any job. Names are unique per application.
 */
export function Scheduled(name: string, spec: string, options: ScheduledOptions = {}): MethodDecorator {
  declareHandle('queue', options.queue ?? `${SCHEDULED_QUEUE_PREFIX}${name}`);
  return appendMethodMetadata(SCHEDULED_METADATA, { name, spec, options });
}
