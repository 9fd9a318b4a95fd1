import { PermanentError } from '../../contract/errors.js';
import type { Job, Queue, StoreLogger, WakeReceiver } from '../../contract/types.js';
import { abortAfter, sleep } from '../../internal/sleep.js';
import { supervise } from './supervise.js';

/** Options of {@link QueueWorker}. */
export interface QueueWorkerOptions {
  readonly queue: Queue;
  /**
   * Called once per claimed job. Resolve to ack, throw to retry, throw `PermanentError` to dead-letter.
   * `signal` aborts when shutdown stops waiting for the job (after the drain timeout).
   */
  readonly handler: (job: Job, signal: AbortSignal) => Promise<unknown>;
  /** Shown in logs, e.g. `OrdersService.deliver`. */
  readonly name: string;
  readonly concurrency: number;
  readonly visibilityTimeoutMs?: number;
  readonly idlePollIntervalMs: number;
  readonly drainTimeoutMs: number;
  readonly workerId: string;
  readonly logger: StoreLogger;
}

/** Longest pause after a failing claim (the database is down, say). */
const MAX_ERROR_BACKOFF_MS = 30_000;

/**
 * A pg-boss-shaped worker: one loop that claims up to its free concurrency,
 * runs each job, and otherwise sleeps until the queue's wake, a finished job
 * or the safety poll. `stop()` stops claiming, waits for in-flight jobs up to
 * the drain timeout, and releases what is still running after it, so the jobs
 * are claimable again at once (a late ack of a released job is fenced out).
 */
export class QueueWorker {
  private readonly inFlight = new Map<Job, Promise<void>>();
  private readonly jobSignals = new Map<Job, AbortController>();
  /** Jobs given back after the drain timeout: their handler's late outcome is dropped, not written. */
  private readonly abandoned = new Set<Job>();
  private readonly stopping = new AbortController();
  private kick = new AbortController();
  private loop: Promise<void> | null = null;
  private wakes: WakeReceiver | null = null;

  constructor(private readonly opts: QueueWorkerOptions) {
    if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
      throw new RangeError(`concurrency of ${opts.name} must be a positive integer, got ${String(opts.concurrency)}`);
    }
  }

  /** Starts the loop. Idempotent. */
  start(): void {
    if (this.loop || this.stopping.signal.aborted) return;
    // Listen before the first claim so no enqueue between the claim and the wait is missed.
    this.wakes = this.opts.queue.listen();
    // Supervised: an unexpected throw in the loop restarts it instead of surfacing as an unhandled rejection.
    this.loop = supervise(this.opts.name, () => this.run(), this.stopping.signal, this.opts.logger);
  }

  /** Stops claiming, drains in-flight jobs up to the drain timeout, releases the rest. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.kick.abort();
    await this.loop;
    this.wakes?.close();
    if (this.inFlight.size > 0) {
      const timer = new AbortController();
      const drained = Promise.allSettled(this.inFlight.values()).then(() => true);
      const finished = await Promise.race([drained, sleep(this.opts.drainTimeoutMs, timer.signal).then(() => false)]);
      timer.abort();
      if (!finished) {
        const left = [...this.inFlight.keys()];
        for (const job of left) {
          this.abandoned.add(job);
          this.jobSignals.get(job)?.abort(new Error('worker stopped: drain timeout'));
        }
        this.opts.logger.warn(`${this.opts.name}: ${left.length} job(s) still running after the ${this.opts.drainTimeoutMs} ms drain; releasing them`);
        await Promise.allSettled(left.map((job) => job.release()));
      }
    }
  }

  private async run(): Promise<void> {
    const stop = this.stopping.signal;
    let errorBackoffMs = 100;
    while (!stop.aborted) {
      const free = this.opts.concurrency - this.inFlight.size;
      if (free > 0) {
        let jobs: Job[];
        try {
          const claim = this.opts.visibilityTimeoutMs === undefined ? undefined : { visibilityTimeoutMs: this.opts.visibilityTimeoutMs };
          jobs = await this.opts.queue.claimBatch(free, this.opts.workerId, claim);
          errorBackoffMs = 100;
        } catch (err) {
          if (stop.aborted) break;
          this.opts.logger.error(`${this.opts.name}: claiming from queue ${JSON.stringify(this.opts.queue.name)} failed; retrying in ${errorBackoffMs} ms`, err);
          await sleep(errorBackoffMs, stop);
          errorBackoffMs = Math.min(errorBackoffMs * 2, MAX_ERROR_BACKOFF_MS);
          continue;
        }
        if (stop.aborted) {
          // Claimed while stopping: never started, so give them back at once.
          await Promise.allSettled(jobs.map((job) => job.release()));
          break;
        }
        for (const job of jobs) this.execute(job);
        // A full batch means there may be more: claim again as soon as a slot frees.
        if (jobs.length === free) continue;
      }
      await this.waitForWork();
    }
  }

  private async waitForWork(): Promise<void> {
    this.kick = new AbortController();
    // Not AbortSignal.timeout inside AbortSignal.any: Node can collect that timeout and never wake us.
    const { signal, clear } = abortAfter(this.opts.idlePollIntervalMs, this.stopping.signal, this.kick.signal);
    try {
      const wakes = this.wakes;
      if (wakes && !wakes.closed) await wakes.recv(signal);
      else await sleep(this.opts.idlePollIntervalMs, signal);
    } finally {
      clear();
    }
  }

  private execute(job: Job): void {
    const abort = new AbortController();
    this.jobSignals.set(job, abort);
    const done = this.process(job, abort.signal).finally(() => {
      this.inFlight.delete(job);
      this.jobSignals.delete(job);
      this.kick.abort();
    });
    this.inFlight.set(job, done);
  }

  private async process(job: Job, signal: AbortSignal): Promise<void> {
    try {
      await this.opts.handler(job, signal);
    } catch (err) {
      if (this.abandoned.has(job)) return;
      const permanent = err instanceof PermanentError;
      this.opts.logger.error(`${this.opts.name} failed on job ${job.id} (attempt ${job.attempts}/${job.maxAttempts})${permanent ? '; dead-lettered (PermanentError)' : ''}`, err);
      try {
        await (permanent ? job.fail(err) : job.retry(err));
      } catch (writeErr) {
        this.opts.logger.error(`${this.opts.name}: recording the failure of job ${job.id} failed; its claim will lapse and it will be retried`, writeErr);
      }
      return;
    }
    if (this.abandoned.has(job)) return;
    try {
      await job.ack();
    } catch (err) {
      this.opts.logger.error(`${this.opts.name}: ack of job ${job.id} failed; its claim will lapse and it will run again`, err);
    }
  }
}
