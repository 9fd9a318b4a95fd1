import { InvalidOption } from '../contract/errors.js';
import { renamedOption } from '../contract/renamed-option.js';
import type { Job, Queue, StoreLogger } from '../contract/types.js';
import { asOption, MAX_BATCH, requireBatchSize, requireInt, requireTimerMs } from '../contract/validate.js';
import { WorkerCore } from './worker-core.js';
import { defaultOutcome, type HandlerWrapper } from './worker-options.js';
import { combineObservers, type WorkerObserver } from './worker-observer.js';

// The queue worker: WorkerCore configured for a queue's handler (what `@QueueHandler` runs); no Nest needed.

/** Options of {@link QueueWorker}. */
export interface QueueWorkerOptions {
  readonly queue: Queue;
  /**
   * Called once per claimed job (or, with `batchSize`, once per batch with a `Job[]`). Resolve to ack,
   * throw to retry, throw `PermanentError` to dead-letter. A batch handler may instead resolve to one
   * entry per job: an `Error` retries (or, a `PermanentError`, dead-letters) that job, anything else acks it.
   * `signal` aborts when shutdown stops waiting for the job (after the drain timeout), and when the job
   * is cancelled from any process while it runs (reason `JobCancelled`; within one wake of the cancel's
   * commit, at most `cancelPollMs`). A single handler's return value is stored as the job's result
   * (`getJob(id).result`, `waitForResult`): any JSON value within the store's `maxPayloadBytes`.
   */
  readonly handler: (job: Job, signal: AbortSignal) => Promise<unknown>;
  /** Batch mode: the handler receives up to this many jobs at once (as `Job[]`). */
  readonly batchSize?: number;
  /** Shown in logs, e.g. `OrdersService.deliver`. */
  readonly name: string;
  readonly concurrency: number;
  /**
   * Claimed jobs the worker may hold on top of `concurrency`, waiting in a local buffer for a free slot.
   * Unset (the default): adaptive, between 0 and {@link AUTO_PREFETCH_MAX} (see there).
   * A number fixes it and wins over the adaptive choice: more means fewer, larger claim statements;
   * 0 claims only for free slots.
   */
  readonly prefetch?: number;
  /** Lease of each claim (ms); default the job's stamped lease (its queue's `leaseMs`). Renewed every half lease. */
  readonly leaseMs?: number;
  readonly idlePollIntervalMs: number;
  readonly drainTimeoutMs: number;
  readonly workerId: string;
  readonly logger: StoreLogger;
  /** Observers of the worker seam (metrics, lifecycle events). */
  readonly observers?: readonly WorkerObserver[];
  /** Runs each handler call inside a context (tracing span, correlation id). */
  readonly wrap?: HandlerWrapper;
  /** How often `queue.stats()` is sampled for observers with a `stats` hook (ms, default 10 000). */
  readonly statsIntervalMs?: number;
  /** How often running jobs are checked for a cancel when no cancel wake came (ms, default 1000). */
  readonly cancelPollMs?: number;
}

/**
 * Largest adaptive prefetch, used when `prefetch` is unset: the worker sizes its buffer itself (see
 * `AdaptivePrefetch` in nestjs-alkstore/extend). It grows (doubling) while claims come back full and the slots sat
 * idle waiting for them, halves when a claim comes back short, and never exceeds what the handlers, at their
 * measured speed, get through in two claim round trips, nor in a quarter of the claim's lease, nor this.
 * So short handlers on a backlog get large claims (few claim and ack statements per job), while long
 * handlers keep a buffer of about one job and leave the rest to other replicas. Past a few hundred jobs a
 * claim statement costs about the same per job, so more would not pay.
 */
export const AUTO_PREFETCH_MAX = 500;

/** Longest pause after a failing store call (the database is down, say). */
const MAX_ERROR_BACKOFF_MS = 30_000;
const FIRST_ERROR_BACKOFF_MS = 100;
/** A hung store call must not hold the loop: it counts as failed (and is retried) after this. */
const STORE_CALL_TIMEOUT_MS = 10_000;
/** On shutdown, pending acks get at least this long to land, even when the drain timeout is shorter. */
const MIN_ACK_DRAIN_MS = 1_000;

/**
 * A queue worker (what `@QueueHandler` runs, usable without Nest from `nestjs-alkstore`): a configuration
 * of the shared {@link WorkerCore}.
 * One loop claims up to its free capacity (`concurrency + prefetch` minus the
 * jobs it holds) in one `claimBatch`, runs at most `concurrency` handlers, and
 * otherwise sleeps until the queue's wake, a freed slot or the safety poll.
 *
 * Prefetch (adaptive unless set, see {@link AUTO_PREFETCH_MAX}): claimed jobs beyond the free slots wait in a local FIFO buffer;
 * one that has waited half its lease is released (`job.release()`) instead of
 * being started late. Acks are coalesced into `queue.ackBatch`. Every running
 * job's claim is renewed (`job.heartbeat`) every half lease, so a handler may
 * run past its visibility timeout without being reclaimed. Failures are
 * written with `job.retry` (the queue's stamped backoff) or, for a
 * `PermanentError`, `job.fail`.
 *
 * `stop()` stops claiming, releases the buffered jobs at once, waits for
 * in-flight jobs up to the drain timeout, releases what is still running
 * after it (a late outcome of a released job is dropped), then writes the
 * pending acks.
 */
export class QueueWorker {
  private readonly core: WorkerCore;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;

  /**
   * @param internal Not for applications: `ackBatch` writes the coalesced acks instead of
   *   `queue.ackBatch` (resolving to how many landed); the workflows use it for the jobs whose ack their
   *   run's end already wrote.
   * @internal
   */
  constructor(
    private readonly opts: QueueWorkerOptions,
    internal?: { readonly ackBatch?: (jobs: readonly Job[]) => Promise<number> },
  ) {
    requireInt(`concurrency of ${opts.name}`, opts.concurrency, 1, MAX_BATCH);
    const prefetch =
      opts.prefetch === undefined ? 0 : requireInt(`prefetch of ${opts.name}`, opts.prefetch, 0, MAX_BATCH);
    const batchSize = opts.batchSize;
    if (batchSize !== undefined) {
      asOption(() => requireBatchSize(`batchSize of ${opts.name}`, batchSize));
      if (prefetch > 0) throw new InvalidOption(`prefetch of ${opts.name}`, 'cannot be combined with batchSize');
    }
    if (opts.statsIntervalMs !== undefined)
      asOption(() => requireTimerMs(`statsIntervalMs of ${opts.name}`, opts.statsIntervalMs));
    if (opts.cancelPollMs !== undefined)
      asOption(() => requireTimerMs(`cancelPollMs of ${opts.name}`, opts.cancelPollMs));
    const leaseMs = renamedOption('QueueWorker', opts, 'visibilityTimeoutMs', 'leaseMs') as number | undefined;
    if (leaseMs !== undefined) asOption(() => requireTimerMs(`leaseMs of ${opts.name}`, leaseMs));
    asOption(() => requireTimerMs(`idlePollIntervalMs of ${opts.name}`, opts.idlePollIntervalMs));
    const batch = batchSize !== undefined;
    const autoPrefetchMax = batch || opts.prefetch !== undefined ? 0 : AUTO_PREFETCH_MAX;
    const handler = opts.handler as (job: unknown, signal: AbortSignal) => unknown;
    this.core = new WorkerCore({
      queue: opts.queue,
      name: opts.name,
      // The handler itself, not a wrapper: the core gives it a signal of its own only if it can read one.
      ...(batch ? { batchHandler: handler, batchSize } : { handler: opts.handler }),
      concurrency: opts.concurrency,
      prefetch,
      autoPrefetchMax,
      // One claim statement takes at most MAX_BATCH jobs.
      maxClaim: batch ? batchSize : Math.min(MAX_BATCH, opts.concurrency + prefetch + autoPrefetchMax),
      leaseMs,
      renewLeases: true,
      // One signal per job: a cancel aborts that job's handler only.
      jobSignals: true,
      keepResults: !batch,
      watchCancels: true,
      ...(opts.cancelPollMs === undefined ? {} : { cancelPollMs: opts.cancelPollMs }),
      storeTimeoutMs: STORE_CALL_TIMEOUT_MS,
      pollIntervalMs: opts.idlePollIntervalMs,
      idlePollIntervalMs: opts.idlePollIntervalMs,
      firstBackoffMs: FIRST_ERROR_BACKOFF_MS,
      maxBackoffMs: MAX_ERROR_BACKOFF_MS,
      drainTimeoutMs: opts.drainTimeoutMs,
      minOutcomeDrainMs: MIN_ACK_DRAIN_MS,
      releaseOnDrainTimeout: true,
      stopMessage: 'worker stopped: drain timeout',
      decide: (_job, failure, error) => defaultOutcome(failure, error),
      workerId: opts.workerId,
      logger: opts.logger,
      logHandlerErrors: true,
      observer: combineObservers(opts.observers ?? [], opts.logger, opts.name),
      statsIntervalMs: opts.statsIntervalMs ?? 10_000,
      wrap: opts.wrap ?? null,
      // Idle, it takes this store's fresh plain enqueues straight from the enqueue (the store's `localHandoff`).
      localHandoff: true,
      ...(internal?.ackBatch ? { ackBatch: internal.ackBatch } : {}),
    });
  }

  /** Starts the loop. Idempotent. */
  start(): void {
    if (this.loop || this.stopping.signal.aborted) return;
    this.loop = this.core.run(this.stopping.signal).catch((err: unknown) => {
      this.opts.logger.error(`${this.opts.name}: the worker loop failed`, err);
    });
  }

  /**
   * Stops claiming, releases the buffered jobs, drains in-flight jobs up to the drain timeout, releases the
   * rest, then writes the pending acks.
   */
  /** Jobs claimed and not yet finished: running, or buffered for a free slot. */
  get inFlight(): number {
    return this.core.inFlight;
  }

  /** The queue it works. */
  get queueName(): string {
    return this.opts.queue.name;
  }

  /** Handlers it runs at once. */
  get concurrency(): number {
    return this.opts.concurrency;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }
}
