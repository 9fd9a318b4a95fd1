import type { OutboxDispatcher } from '../../outbox/index.js';
import type { JobOpts, QueueOpts } from '../../contract/options.js';
import type { JobMetrics } from '../../metrics/job-metrics.js';
import type { WorkerEventName } from '../../worker/worker-events.js';
import type { CatchUpPolicy } from '../../contract/types.js';

/** Options of `@QueueHandler(queue, options)`. */
export interface QueueHandlerOptions {
  /** Jobs run at once by this process (default 1). */
  concurrency?: number;
  /**
   * Claimed jobs held on top of `concurrency` in a local buffer: fewer, larger claims. Unset (the default):
   * adaptive, the worker grows the buffer while claims come back full and its slots wait for them, shrinks it
   * when claims come back short, and bounds it by what the handlers start in a quarter of the lease (at most
   * 500). A number fixes it and wins over the adaptive choice (0: claim only for free slots). A buffered job
   * keeps its lease; one that waits half of it is released instead of started late; on shutdown the buffer is
   * released at once.
   */
  prefetch?: number;
  /**
   * Lease of each claim this handler makes (ms), renewed every half lease while the job runs; default the
   * job's stamped lease (the queue's `leaseMs`, see `queueOpts`).
   */
  leaseMs?: number;
  /** @deprecated Renamed `leaseMs` (docs/vocabulary.md); accepted, with one warning, until 0.4. */
  visibilityTimeoutMs?: number;
  /** Options registered for the queue in this store (stamped on jobs enqueued through it; `leaseMs` there is the jobs' default lease). */
  queueOpts?: QueueOpts;
  /** Safety poll while idle (ms); default the module's `idlePollIntervalMs`. */
  idlePollIntervalMs?: number;
  /**
   * Batch mode: the method receives up to `batchSize` jobs at once (`Job[]`), claimed in one statement.
   * Resolve to ack them all (one `ackBatch`), throw to retry them all, or resolve to one entry per job:
   * an `Error` retries that job (`PermanentError` dead-letters it), anything else acks it.
   * `concurrency` then counts batches; `prefetch` is not allowed.
   */
  batchSize?: number;
  /** This handler's metrics sink instead of the module's; `false`: none for this handler. */
  metrics?: JobMetrics | false;
}

/** Options of `@Scheduled(name, spec, options)`. */
export interface ScheduledOptions extends Omit<QueueHandlerOptions, 'queueOpts'> {
  /** The queue boundaries are enqueued on; default `scheduled:<name>`. */
  queue?: string;
  /** Payload of every fired job (default null). */
  payload?: unknown;
  priority?: JobOpts['priority'];
  maxAttempts?: number;
  expiresInMs?: number;
  /** IANA time zone a cron spec is read in (default `UTC`), e.g. `Europe/Berlin`. */
  timeZone?: string;
  /** Boundaries missed while no replica ran the scheduler: `'all'` (default, at most 64), `'latest'` or `'none'`. */
  catchUp?: CatchUpPolicy;
}

/** Dispatcher settings a `@OutboxHandler` may override (see `OutboxSettings` in `alkstore/outbox`), plus its metrics sink. */
export type OutboxHandlerSettings = NonNullable<ConstructorParameters<typeof OutboxDispatcher>[0]['settings']> & {
  /** This handler's metrics sink instead of the module's; `false`: none for this handler. */
  metrics?: JobMetrics | false;
};

/** What `@OutboxHandler` records on its method. */
export interface OutboxHandlerMetadata {
  readonly outbox: string;
  readonly settings?: OutboxHandlerSettings;
  /** The queue options of the `defineOutbox` ref it was given. */
  readonly opts?: QueueOpts;
}

/** What `@QueueHandler` records on its method. */
export interface QueueHandlerMetadata {
  readonly queue: string;
  readonly options: QueueHandlerOptions;
}

/** What `@OnQueueEvent` / `@OnOutboxEvent` record on their method. */
export interface WorkerEventMetadata {
  readonly kind: 'queue' | 'outbox';
  readonly name: string;
  readonly event: WorkerEventName;
}

/** What `@Scheduled` records on its method. */
export interface ScheduledMetadata {
  readonly name: string;
  readonly spec: string;
  readonly options: ScheduledOptions;
}
