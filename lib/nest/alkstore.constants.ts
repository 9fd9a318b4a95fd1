/** Injection token of the resolved module options. */
export const ALKSTORE_MODULE_OPTIONS = 'alkstore:module-options';

/** Injection token of the queue and outbox names `forRoot` / `forRootAsync` list (`queues`, `outboxes`). */
export const ALKSTORE_LISTED_HANDLES = 'alkstore:listed-handles';

/** Injection token of the queue options this application's own handlers declare (see `discoverOwnHandles`). */
export const ALKSTORE_OWN_HANDLES = 'alkstore:own-handles';

/** Metadata key of `@OutboxHandler` (a list per method). */
export const OUTBOX_HANDLER_METADATA = 'alkstore:outbox-handler';
/** Metadata key of `@QueueHandler` (a list per method). */
export const QUEUE_HANDLER_METADATA = 'alkstore:queue-handler';
/** Metadata key of `@OnQueueEvent` / `@OnOutboxEvent` (a list per method). */
export const WORKER_EVENT_METADATA = 'alkstore:worker-event';
/** Metadata key of `@Scheduled` (a list per method). */
export const SCHEDULED_METADATA = 'alkstore:scheduled';

/** Prefix of the queue a `@Scheduled` method's boundaries are enqueued on, unless `options.queue` names one. */
export const SCHEDULED_QUEUE_PREFIX = 'scheduled:';

/** Default drain budget of `app.close()` for in-flight handlers (ms). */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;
/** Default safety poll of idle queue workers (ms); wakes normally cut the wait short. */
export const DEFAULT_IDLE_POLL_INTERVAL_MS = 5_000;

/** The provider token of the queue handle `queue` (a name or a `QueueRef`). */
export function getQueueToken(queue: string | { readonly name: string }): string {
  return `alkstore:queue:${typeof queue === 'string' ? queue : queue.name}`;
}

/** The provider token of the outbox handle `outbox` (a name or an `OutboxRef`). */
export function getOutboxToken(outbox: string | { readonly name: string }): string {
  return `alkstore:outbox:${typeof outbox === 'string' ? outbox : outbox.name}`;
}
