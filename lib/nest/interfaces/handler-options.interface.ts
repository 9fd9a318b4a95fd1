import type { OutboxOrdering, OutboxSettings } from '../../outbox/index.js';
import type { JobOpts, QueueOpts } from '../../contract/options.js';
import type { JobMetrics } from '../../metrics/job-metrics.js';
import type { WorkerEventName } from '../../worker/worker-events.js';
import type { CatchUpPolicy } from '../../contract/types.js';

/**
 * The worker settings every handler decorator shares, one word per idea (docs/vocabulary.md):
 * `@QueueHandler`, `@Scheduled`, `@OutboxHandler`, `@InboxHandler` and `@Workflow` each take the ones
 * they can honour, under these names and with these meanings (their options types pick from this one).
 * A setting a decorator cannot honour, or a misspelt or renamed one, fails startup (`InvalidHandler`
 * naming the class and method); so does a bad value, before anything runs.
 */
export interface HandlerOptions {
  /** Calls of the method run at once by this process (a positive integer; default: the decorator's). */
  readonly concurrency?: number;
  /**
   * Lease (ms) of each claim the handler's worker makes: how long it holds the work before another
   * process may take it; renewed every half lease while the method runs.
   */
  readonly leaseMs?: number;
  /** Attempts before the work is dead (a step: fails for good); a `PermanentError` ends it at once. */
  readonly maxAttempts?: number;
  /** Base (ms) of the exponential backoff between attempts (the delay after the first failed attempt). */
  readonly backoffBaseMs?: number;
  /** Safety poll (ms) of the worker while it finds no work (wakes cut it short). */
  readonly idlePollIntervalMs?: number;
  /** This handler's metrics sink instead of the module's; `false`: none for this handler. */
  readonly metrics?: JobMetrics | false;
}

/**
 * Options of `@QueueHandler(queue, options)`. The shared ones: `concurrency` (default 1), `leaseMs`
 * (default the job's stamped lease, the queue's `leaseMs`), `maxAttempts` and `backoffBaseMs` (the
 * queue's options for jobs enqueued through this application's `Queue` handle, stamped at enqueue),
 * `idlePollIntervalMs` (default the module's) and `metrics`.
 */
export interface QueueHandlerOptions extends HandlerOptions {
  /**
   * Claimed jobs held on top of `concurrency` in a local buffer: fewer, larger claims. Unset (the default):
   * adaptive, the worker grows the buffer while claims come back full and its slots wait for them, shrinks it
   * when claims come back short, and bounds it by what the handlers start in a quarter of the lease (at most
   * 500). A number fixes it and wins over the adaptive choice (0: claim only for free slots). A buffered job
   * keeps its lease; one that waits half of it is released instead of started late; on shutdown the buffer is
   * released at once.
   */
  readonly prefetch?: number;
  /**
   * Options registered for the queue in this store (stamped on jobs enqueued through it; `leaseMs` there is
   * the jobs' default lease). Attempts and backoff are the handler's own `maxAttempts` / `backoffBaseMs`.
   */
  readonly queueOpts?: Omit<QueueOpts, 'maxAttempts' | 'backoffBaseMs' | 'visibilityTimeoutMs'>;
  /**
   * Batch mode: the method receives up to `batchSize` jobs at once (`Job[]`), claimed in one statement.
   * Resolve to ack them all (one `ackBatch`), throw to retry them all, or resolve to one entry per job:
   * an `Error` retries that job (`PermanentError` dead-letters it), anything else acks it.
   * `concurrency` then counts batches; `prefetch` is not allowed.
   */
  readonly batchSize?: number;
}

/**
 * Options of `@Scheduled(name, spec, options)`. The shared ones: `concurrency`, `leaseMs`,
 * `idlePollIntervalMs` and `metrics` as for `@QueueHandler`, and `maxAttempts` of every fired job (a
 * fired job retries with the queue's backoff: the schedule stores no `backoffBaseMs`).
 */
export interface ScheduledOptions extends Omit<HandlerOptions, 'backoffBaseMs'> {
  /** The queue boundaries are enqueued on; default `scheduled:<name>`. */
  readonly queue?: string;
  /** Payload of every fired job (default null). */
  readonly payload?: unknown;
  readonly priority?: JobOpts['priority'];
  readonly expiresInMs?: number;
  /** IANA time zone a cron spec is read in (default `UTC`), e.g. `Europe/Berlin`. */
  readonly timeZone?: string;
  /** Boundaries missed while no replica ran the scheduler: `'all'` (default, at most 64), `'latest'` or `'none'`. */
  readonly catchUp?: CatchUpPolicy;
  /** As for `@QueueHandler`. */
  readonly prefetch?: number;
  /** As for `@QueueHandler`. */
  readonly batchSize?: number;
}

/**
 * Options of `@OutboxHandler(outbox, options)`: the dispatcher's settings (`OutboxSettings` in
 * `nestjs-alkstore`) in the handlers' words. The shared ones: `concurrency` (messages in flight, default
 * 64), `leaseMs` (default 30 000), `maxAttempts` (default 5) and `backoffBaseMs` (default 1 000) of a
 * failed delivery (its `retry.maxAttempts` and `retry.baseMs`), `idlePollIntervalMs` (default the
 * module's) and `metrics`.
 */
export interface OutboxHandlerOptions extends HandlerOptions {
  /** Most messages one claim takes (default 32). */
  readonly claimSize?: number;
  /** A delivery still running after this long is a transient failure; the handler's signal aborts. */
  readonly publishTimeoutMs?: number;
  /** The wait after a claim that came back short while messages flow. */
  readonly busyPollIntervalMs?: number;
  /** On shutdown, how long in-flight deliveries may still finish (default the module's). */
  readonly drainTimeoutMs?: number;
  /** A store call still pending after this long counts as failed. */
  readonly storeTimeoutMs?: number;
  /** How often the outbox's depth is sampled for metrics. */
  readonly statsIntervalMs?: number;
  /** `'unordered'` (default) or `'per-key'`: one message of an `orderingKey` at a time, in enqueue order. */
  readonly ordering?: OutboxOrdering;
  /** Longest delay between two attempts (ms, default 300 000; the settings' `retry.maxDelayMs`). */
  readonly maxBackoffMs?: number;
  /** Fraction in [0, 1) by which a delay is randomly shortened (default 0.2; the settings' `retry.jitter`). */
  readonly backoffJitter?: number;
}

/** What `@OutboxHandler` records on its method. */
export interface OutboxHandlerMetadata {
  readonly outbox: string;
  /** The handler's options, or a built `OutboxSettings` (from `OutboxSettings.fromEnv`, say). */
  readonly settings?: OutboxHandlerOptions | OutboxSettings;
  /** The queue options of the `defineOutbox` ref it was given. */
  readonly opts?: QueueOpts;
}

/** What `@QueueHandler` records on its method. */
export interface QueueHandlerMetadata {
  readonly queue: string;
  /** The options given, with `queueOpts` the queue options the application registers for the queue. */
  readonly options: QueueHandlerOptions;
  /** An option given in two places, which the explorer refuses at startup. */
  readonly misuse?: { readonly option: string; readonly reason: string };
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
