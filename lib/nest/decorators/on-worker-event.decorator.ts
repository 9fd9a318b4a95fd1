import { WORKER_EVENT_METADATA } from '../alkstore.constants.js';
import type { WorkerEventName } from '../../worker/worker-events.js';
import { appendMethodMetadata } from '../utils/append-metadata.js';

/**
 * Calls the method on a lifecycle event of the `@QueueHandler` (or
 * `@Scheduled` queue) worker of `queue` in this application, in the manner of
 * `@nestjs/bullmq`'s `@OnWorkerEvent`. Events and arguments:
 * `completed(job, durationMs)`, `failed(job, error)`, `retried(job, error)`,
 * `dead(job, error, reason)`, `lease-lost(job | null)`, `drained()`.
 * Listeners run on the worker's path and are not awaited; a throw is logged.
 *
 * ```ts
 * @OnQueueEvent('emails', 'dead')
 * alert(job: Job, error: unknown) { … }
 * ```
 */
export function OnQueueEvent(queue: string, event: WorkerEventName): MethodDecorator {
  return appendMethodMetadata(WORKER_EVENT_METADATA, { kind: 'queue', name: queue, event });
}

/** {@link OnQueueEvent} for the `@OutboxHandler` dispatcher of `outbox`. */
export function OnOutboxEvent(outbox: string, event: WorkerEventName): MethodDecorator {
  return appendMethodMetadata(WORKER_EVENT_METADATA, { kind: 'outbox', name: outbox, event });
}
