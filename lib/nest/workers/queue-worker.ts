import { PermanentError } from '../../contract/errors.js';
import type { Job, Queue, StoreLogger, WakeReceiver } from '../../contract/types.js';
import { deadLetterLine } from '../../internal/dead-letter-log.js';
import { errorText } from '../../internal/outbox-handle.js';
import { sleep } from '../../internal/sleep.js';
import { AckBatcher } from '../../outbox/ack-batcher.js';
import { withTimeout } from '../../outbox/timers.js';
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
  /**
   * Claimed jobs the worker may hold on top of `concurrency`, waiting in a local buffer for a free slot
   * (default {@link DEFAULT_PREFETCH}). More means fewer, larger claim statements; 0 claims only for free slots.
   */
  readonly prefetch?: number;
  readonly visibilityTimeoutMs?: number;
  readonly idlePollIntervalMs: number;
  readonly drainTimeoutMs: number;
  readonly workerId: string;
  readonly logger: StoreLogger;
}

/**
 * Default `prefetch`: none, today's behaviour. A buffer speeds up short handlers (fewer claim commits per
 * job; see docs/bench.md), but with long handlers and several replicas a buffered job would wait up to
 * half its lease behind this replica's busy slots while another replica sits idle: opt in per handler.
 */
export const DEFAULT_PREFETCH = 0;

/** Longest pause after a failing claim (the database is down, say). */
const MAX_ERROR_BACKOFF_MS = 30_000;
/** First and longest pause before rewriting acks whose write failed. */
const FIRST_ACK_RETRY_MS = 100;
const MAX_ACK_RETRY_MS = 5_000;
/** A hung ack write must not hold every later ack behind it: it counts as failed (and is retried) after this. */
const ACK_WRITE_TIMEOUT_MS = 10_000;
/** On shutdown, pending acks get at least this long to land, even when the drain timeout is shorter. */
const MIN_ACK_DRAIN_MS = 1_000;

/** A claimed job waiting in the local buffer for a free slot. */
interface Buffered {
  readonly job: Job;
  /** performance.now() after which it is released instead of run: half its lease, counted from before the claim. */
  readonly releaseAt: number;
}

/** A job whose handler succeeded and whose ack is not recorded yet. */
interface PendingAck {
  readonly job: Job;
  /** Failed writes so far. */
  failures: number;
}

/**
 * A pg-boss-shaped worker: one loop that claims up to its free capacity
 * (`concurrency + prefetch` minus the jobs it holds) in one `claimBatch`,
 * runs at most `concurrency` handlers, and otherwise sleeps until the queue's
 * wake, a freed slot (when more work is probably ready) or the safety poll.
 *
 * Prefetch: claimed jobs beyond the free slots wait in a local FIFO buffer
 * and start as slots free, so one claim commit feeds more jobs. They hold
 * their lease while waiting; one that has waited half its lease is released
 * (`job.release()`: pending at once, attempt given back) instead of being
 * started late, where its lease could lapse mid-run. With a prefetch, the
 * loop claims again only once the buffer is down to half the prefetch.
 *
 * Acks are batched: a job whose handler resolved frees its slot at once and
 * its ack joins the next `queue.ackBatch` (written within the same
 * event-loop turn, or right after the ack write in flight). A fenced ack
 * (the claim lapsed and the job may run again elsewhere) is the documented
 * at-least-once window, not an error. A failing ack write is retried with
 * backoff until the job's claim deadline passes. At most `concurrency + prefetch`
 * unrecorded acks are held before claiming pauses.
 *
 * `stop()` stops claiming, releases the buffered jobs at once (they never
 * started, so another worker can claim them with their attempt given back),
 * waits for in-flight jobs up to the drain timeout,
 * releases what is still running after it, so the jobs are claimable again
 * at once (a late ack of a released job is fenced out), then writes the
 * pending acks.
 */
export class QueueWorker {
  /** Running handlers (and the retry/dead-letter write of a failed one). */
  private readonly running = new Set<Job>();
  /** Claimed jobs waiting for a slot, in claim order. */
  private buffer: Buffered[] = [];
  private readonly prefetch: number;
  /** Ends the wait of buffered jobs that reach their release point before a slot frees. */
  private expiryTimer: ReturnType<typeof setTimeout> | null = null;
  private expiryAt = 0;
  /** Resolves stop()'s wait once `running` empties. */
  private onDrained: (() => void) | null = null;
  /**
   * The handlers' signal. Shared: the only abort is shutdown giving up on every job still running at
   * the drain timeout at once (and a per-job controller costs more than the rest of a no-op job).
   */
  private readonly handlerAbort = new AbortController();
  /** Jobs given back after the drain timeout: their handler's late outcome is dropped, not written. */
  private readonly abandoned = new Set<Job>();
  private readonly stopping = new AbortController();
  private readonly acks: AckBatcher<PendingAck>;
  /** Acks whose write failed, waiting for {@link retryTimer}. */
  private unacked: PendingAck[] = [];
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private ackRetryMs = FIRST_ACK_RETRY_MS;
  /** Ends the loop's current wait: true for the queue's wake, false for a kick, the poll or stop. */
  private waiter: ((woken: boolean) => void) | null = null;
  /** A wake arrived while the loop was not waiting. */
  private wakePending = false;
  private kickScheduled = false;
  /** The last claim filled every free slot, or a wake arrived while no slot was free: a freed slot claims at once. */
  private backlog = false;
  private loop: Promise<void> | null = null;
  private wakes: WakeReceiver | null = null;

  constructor(private readonly opts: QueueWorkerOptions) {
    if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
      throw new RangeError(`concurrency of ${opts.name} must be a positive integer, got ${String(opts.concurrency)}`);
    }
    this.prefetch = opts.prefetch ?? DEFAULT_PREFETCH;
    if (!Number.isInteger(this.prefetch) || this.prefetch < 0) {
      throw new RangeError(`prefetch of ${opts.name} must be a non-negative integer, got ${String(opts.prefetch)}`);
    }
    this.acks = new AckBatcher<PendingAck>({
      maxBatch: opts.concurrency + this.prefetch,
      write: (items) =>
        withTimeout(
          opts.queue.ackBatch(items.map((a) => a.job)),
          ACK_WRITE_TIMEOUT_MS,
          'ackBatch',
        ),
      landed: (items, count) => this.acksLanded(items, count),
      failed: (items, err) => this.acksFailed(items, err),
    });
  }

  /** Starts the loop. Idempotent. */
  start(): void {
    if (this.loop || this.stopping.signal.aborted) return;
    // Listen before the first claim so no enqueue between the claim and the wait is missed.
    this.wakes = this.opts.queue.listen();
    void this.receiveWakes(this.wakes);
    // Supervised: an unexpected throw in the loop restarts it instead of surfacing as an unhandled rejection.
    this.loop = supervise(this.opts.name, () => this.run(), this.stopping.signal, this.opts.logger);
  }

  /**
   * Stops claiming, releases the buffered jobs, drains in-flight jobs up to the drain timeout, releases the
   * rest, then writes the pending acks.
   */
  async stop(): Promise<void> {
    const started = performance.now();
    this.stopping.abort();
    this.waiter?.(false);
    // Buffered jobs never started: give them back before waiting for anything, so other workers take them now.
    const releasing = this.releaseBuffered(this.buffer.splice(0).map((b) => b.job), 'the worker is stopping');
    await this.loop;
    this.wakes?.close();
    await releasing;
    if (this.running.size > 0) {
      const timer = new AbortController();
      const drained = new Promise<boolean>((resolve) => {
        this.onDrained = () => resolve(true);
      });
      const finished = await Promise.race([drained, sleep(this.opts.drainTimeoutMs, timer.signal).then(() => false)]);
      timer.abort();
      this.onDrained = null;
      if (!finished) {
        const left = [...this.running];
        for (const job of left) this.abandoned.add(job);
        this.handlerAbort.abort(new Error('worker stopped: drain timeout'));
        this.opts.logger.warn(`${this.opts.name}: ${left.length} job(s) still running after the ${this.opts.drainTimeoutMs} ms drain; releasing them`);
        await Promise.allSettled(left.map((job) => job.release()));
      }
    }
    await this.drainAcks(Math.max(started + this.opts.drainTimeoutMs, performance.now() + MIN_ACK_DRAIN_MS));
  }

  /** Writes pending acks (retrying failed ones at once) until none is left or `deadline` passes. */
  private async drainAcks(deadline: number): Promise<void> {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    while (this.acks.size > 0 || this.unacked.length > 0) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      this.requeueUnacked();
      this.acks.flush();
      const timer = new AbortController();
      await Promise.race([this.acks.idle(), sleep(left, timer.signal)]);
      timer.abort();
      // Writes that failed just now: pause before rewriting, within what is left.
      if (this.unacked.length > 0 && this.acks.size === 0) await sleep(Math.min(this.ackRetryMs, deadline - performance.now()));
    }
    const unwritten = this.acks.size + this.unacked.length;
    if (unwritten > 0) {
      this.opts.logger.warn(`${this.opts.name}: ${unwritten} ack(s) not recorded by shutdown; those jobs run again after their claims lapse`);
    }
  }

  private async run(): Promise<void> {
    const stop = this.stopping.signal;
    let errorBackoffMs = 100;
    while (!stop.aborted) {
      const free = this.freeSlots();
      if (free > 0) {
        let jobs: Job[];
        const claimStarted = performance.now();
        const wallStarted = Date.now();
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
        this.take(jobs, claimStarted, wallStarted);
        // A full batch means there may be more: claim again as soon as a slot frees.
        this.backlog = jobs.length === free;
        if (this.backlog && this.freeSlots() > 0) continue;
      }
      if (await this.waitForWork()) this.backlog = true;
    }
  }

  /**
   * How many jobs the next claim may take: the free capacity (`concurrency + prefetch` minus running and
   * buffered jobs), 0 while the buffer is above half the prefetch (claim in larger, fewer batches) or while
   * more than that capacity of acks is unrecorded (a slow or failing ack write).
   */
  private freeSlots(): number {
    const capacity = this.opts.concurrency + this.prefetch;
    if (this.acks.size + this.unacked.length > capacity) return 0;
    if (this.buffer.length > Math.floor(this.prefetch / 2)) return 0;
    return capacity - this.running.size - this.buffer.length;
  }

  /** Starts what free slots allow of a fresh claim and buffers the rest. */
  private take(jobs: readonly Job[], claimStarted: number, wallStarted: number): void {
    for (const job of jobs) {
      if (this.running.size < this.opts.concurrency && this.buffer.length === 0) {
        this.execute(job);
        continue;
      }
      // Half the lease, counted from before the claim was sent (so never later than the database's half-way point).
      const leaseMs = this.opts.visibilityTimeoutMs ?? Math.max(0, job.deadline - wallStarted);
      this.buffer.push({ job, releaseAt: claimStarted + leaseMs / 2 });
    }
    this.startBuffered();
  }

  /** Moves buffered jobs into free slots; one past its release point is given back instead of started late. */
  private startBuffered(): void {
    if (this.stopping.signal.aborted) return;
    let late: Job[] | null = null;
    const now = performance.now();
    while (this.running.size < this.opts.concurrency && this.buffer.length > 0) {
      const next = this.buffer.shift()!;
      if (now >= next.releaseAt) (late ??= []).push(next.job);
      else this.execute(next.job);
    }
    if (late) void this.releaseBuffered(late, 'they waited half their lease for a free slot');
    this.scheduleExpiry();
  }

  /** Keeps one timer at the earliest release point of the buffer. */
  private scheduleExpiry(): void {
    if (this.buffer.length === 0 || this.stopping.signal.aborted) {
      if (this.expiryTimer) clearTimeout(this.expiryTimer);
      this.expiryTimer = null;
      return;
    }
    let first = Infinity;
    for (const b of this.buffer) first = Math.min(first, b.releaseAt);
    // A timer due no later than the first release point stays (it re-plans when it fires): no timer churn per job.
    if (this.expiryTimer && this.expiryAt <= first) return;
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryAt = first;
    this.expiryTimer = setTimeout(() => {
      this.expiryTimer = null;
      const now = performance.now();
      const late = this.buffer.filter((b) => now >= b.releaseAt).map((b) => b.job);
      if (late.length > 0) {
        this.buffer = this.buffer.filter((b) => now < b.releaseAt);
        void this.releaseBuffered(late, 'they waited half their lease for a free slot');
        // Buffer space freed: claim again if work is waiting (the releases themselves wake the queue too).
        this.slotFreed();
      }
      this.scheduleExpiry();
    }, Math.max(0, first - performance.now()));
  }

  /** Gives buffered (never started) jobs back: pending at once, attempt returned. A failed release lets the claim lapse. */
  private async releaseBuffered(jobs: readonly Job[], why: string): Promise<void> {
    if (this.expiryTimer && this.buffer.length === 0) {
      clearTimeout(this.expiryTimer);
      this.expiryTimer = null;
    }
    if (jobs.length === 0) return;
    const line = `${this.opts.name}: releasing ${jobs.length} buffered job(s) that never started: ${why}`;
    // On shutdown this is the normal path; while running it means the prefetch outruns the handlers.
    if (this.stopping.signal.aborted) this.opts.logger.log(line);
    else this.opts.logger.warn(line);
    const results = await Promise.allSettled(jobs.map((job) => job.release()));
    const failed = results.filter((r) => r.status === 'rejected').length;
    if (failed > 0) {
      this.opts.logger.error(`${this.opts.name}: releasing ${failed} buffered job(s) failed; they run again after their claims lapse`, (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason);
    }
  }

  /** Turns the queue's wakes into a flag and a resolved wait: no AbortSignal per wait. */
  private async receiveWakes(wakes: WakeReceiver): Promise<void> {
    try {
      for (;;) {
        if ((await wakes.recv()) === null) return;
        const w = this.waiter;
        if (w) w(true);
        else this.wakePending = true;
      }
    } catch (err) {
      // Not expected (recv only rejects on a second concurrent recv); the idle poll still finds the work.
      this.opts.logger.warn(`${this.opts.name}: stopped listening for wakes of queue ${JSON.stringify(this.opts.queue.name)} (${String(err)}); polling every ${this.opts.idlePollIntervalMs} ms`);
    }
  }

  /** Resolves true when the queue's wake ended the wait (a commit on the queue), false on a kick, the poll or stop. */
  private waitForWork(): Promise<boolean> {
    if (this.wakePending) {
      this.wakePending = false;
      return Promise.resolve(true);
    }
    if (this.stopping.signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), this.opts.idlePollIntervalMs);
      const done = (woken: boolean): void => {
        clearTimeout(timer);
        if (this.waiter === done) this.waiter = null;
        resolve(woken);
      };
      this.waiter = done;
    });
  }

  /** Ends the loop's current wait, if any, to claim again. */
  private kick(): void {
    this.waiter?.(false);
  }

  /**
   * Wakes the loop to claim for freed slots, once per event-loop turn: jobs finishing together share one
   * claim. Only when more work is probably ready; otherwise the queue's wake or the poll ends the wait.
   */
  private slotFreed(): void {
    if (!this.backlog || this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      this.kick();
    });
  }

  private execute(job: Job): void {
    this.running.add(job);
    void this.process(job)
      .catch((err: unknown) => this.opts.logger.error(`${this.opts.name}: bookkeeping of job ${job.id} failed`, err))
      .finally(() => {
        this.running.delete(job);
        this.startBuffered();
        if (this.running.size === 0) this.onDrained?.();
        this.slotFreed();
      });
  }

  private async process(job: Job): Promise<void> {
    try {
      await this.opts.handler(job, this.handlerAbort.signal);
    } catch (err) {
      if (this.abandoned.has(job)) return;
      const permanent = err instanceof PermanentError;
      const dies = permanent || job.attempts >= job.maxAttempts;
      if (!permanent) this.opts.logger.error(`${this.opts.name} failed on job ${job.id} (attempt ${job.attempts}/${job.maxAttempts})`, err);
      try {
        const landed = await (permanent ? job.fail(err) : job.retry(err));
        const reason = permanent ? `permanent: ${errorText(err)}` : `exhausted after ${job.attempts} attempts: ${errorText(err)}`;
        if (dies && landed) this.opts.logger.warn(deadLetterLine(`${this.opts.name} (queue ${JSON.stringify(job.queue)})`, job.id, reason));
      } catch (writeErr) {
        this.opts.logger.error(`${this.opts.name}: recording the failure of job ${job.id} failed; its claim will lapse and it will be retried`, writeErr);
      }
      return;
    }
    if (this.abandoned.has(job)) return;
    this.acks.add({ job, failures: 0 });
  }

  private acksLanded(items: readonly PendingAck[], count: number): void {
    this.ackRetryMs = FIRST_ACK_RETRY_MS;
    const fenced = items.length - count;
    if (fenced > 0) {
      // Not an error: the claims lapsed (a long handler without heartbeats, a stalled loop) and the jobs may run again.
      this.opts.logger.warn(`${this.opts.name}: ${fenced} of ${items.length} ack(s) came after the claim lapsed; those jobs may run again`);
    }
    // Held-back claims may resume.
    if (this.backlog) this.kick();
  }

  /** Keeps failed acks for a retry with backoff, while their claims may still be valid. */
  private acksFailed(items: readonly PendingAck[], err: unknown): void {
    const now = Date.now();
    const keep: PendingAck[] = [];
    for (const a of items) {
      a.failures += 1;
      // Past its deadline the ack would be fenced anyway; retry at least once so a clock skew cannot rule out a retry.
      if (a.failures < 2 || now < a.job.deadline) keep.push(a);
    }
    const dropped = items.length - keep.length;
    this.opts.logger.error(
      `${this.opts.name}: recording the ack of ${items.length} job(s) failed; ${keep.length > 0 ? `retrying in ${this.ackRetryMs} ms` : ''}${dropped > 0 ? `${keep.length > 0 ? '; ' : ''}${dropped} claim(s) lapsed, those jobs will run again` : ''}`,
      err,
    );
    this.unacked.push(...keep);
    this.scheduleAckRetry();
  }

  private scheduleAckRetry(): void {
    if (this.retryTimer || this.unacked.length === 0 || this.stopping.signal.aborted) return;
    const delay = this.ackRetryMs;
    this.ackRetryMs = Math.min(this.ackRetryMs * 2, MAX_ACK_RETRY_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.requeueUnacked();
    }, delay);
  }

  private requeueUnacked(): void {
    const due = this.unacked;
    this.unacked = [];
    for (const a of due) this.acks.add(a);
  }
}
