import { performance } from 'node:perf_hooks';
import type { WorkerCoreOptions, FailureKind, FailureOutcome } from './worker-options.js';
import { decideSafely } from './worker-options.js';
import { deadLetterLine } from '../internal/dead-letter-log.js';
import { Codec, PayloadTooLarge } from '../contract/errors.js';
import { needsOutcome } from '../contract/results.js';
import { FLOW_HEADER } from '../contract/flows.js';
import { AckBatcher } from './ack-batcher.js';
import type { StoreHealth } from './store-health.js';
import { withTimeout } from './timers.js';
import { abortJob, LeaseLostAbort, type Tracked, type TrackedState } from './tracked.js';
import type { AbandonReason, HandlerResult, WorkerObserver } from './worker-observer.js';

// The outcome writer: acks coalesced into ackBatch, fenced retry and dead-letter writes, rewrites within the
// lease after a store error, and the wakes a settled outcome gives the claim loop.

/** What the outcome writer needs from the worker core. */
export interface OutcomeWriterHost {
  readonly o: WorkerCoreOptions;
  /** The guarded observer, or null. */
  readonly obs: WorkerObserver | null;
  readonly health: StoreHealth;
  /** Largest single ackBatch. */
  readonly maxAckBatch: number;
  /** The drain gave up: late results and writes are dropped. */
  stopped(): boolean;
  /** The worker lets go of `t` (it no longer holds a slot or a claim). */
  untrack(t: Tracked): void;
  /** The claim loop waits for capacity (slots taken or too many outcomes unsettled). */
  heldBack(): boolean;
  /** The last claim came back full or a wake came while the slots were taken: more work is probably ready. */
  backlog(): boolean;
  /** Ends the claim loop's wait now. */
  kick(): void;
  /** Ends the claim loop's wait once this event-loop turn. */
  scheduleKick(): void;
}

/**
 * Writes what each handler call decided: an ack (coalesced with the acks of the same turn into one
 * `queue.ackBatch`), a retry (`job.retry`, with `decide`'s delay or the queue's backoff) or a dead letter
 * (`job.fail`), every write fenced by the claim token. A write that fails is retried with the store
 * backoff until one lease has passed since its first failure, then abandoned (the job runs again after
 * its claim lapses). A fenced write (0 rows) means the lease was lost. Outcomes not yet landed count as
 * `unsettled` and hold back claims; each one that settles wakes a held-back claim loop.
 */
export class OutcomeWriter {
  /** Jobs whose outcome write is queued, in flight or waiting for a retry. */
  unsettled = 0;
  private readonly acks: AckBatcher<Tracked>;
  private unrecorded: Tracked[] = [];
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  /** performance.now() of the first failed write of each job whose outcome is waiting for a rewrite. */
  private readonly failingSince = new WeakMap<Tracked, number>();

  constructor(private readonly host: OutcomeWriterHost) {
    const o = host.o;
    this.acks = new AckBatcher<Tracked>({
      maxBatch: host.maxAckBatch,
      maxWrites: o.ackWrites ?? 1,
      write: (items) =>
        host.stopped() ? Promise.resolve(0) : withTimeout(this.writeAcks(items), o.storeTimeoutMs, 'ackBatch'),
      landed: (items, count) => this.acksLanded(items, count),
      failed: (items, err) => this.acksFailed(items, err),
    });
  }

  private writeAcks(items: readonly Tracked[]): Promise<number> {
    const o = this.host.o;
    const jobs = items.map((t) => t.job);
    return o.ackBatch
      ? o.ackBatch(
          jobs,
          items.map((t) => t.result),
        )
      : o.queue.ackBatch(jobs);
  }

  /** Outcomes waiting for a rewrite after a failed write. */
  get waitingRewrite(): number {
    return this.unrecorded.length;
  }

  /** One job's handler result: queue its ack or write its failure, unless the worker let go of it meanwhile. */
  settle(t: Tracked, result: HandlerResult, error: unknown, durationMs: number): void {
    // The drain gave up on it (left to its lease or released): its late result is dropped.
    if (t.state === 'finished') return;
    const { o, obs } = this.host;
    if (result === 'ok') obs?.completed?.(t.job, durationMs);
    else {
      obs?.failed?.(t.job, error, durationMs, result);
      // A PermanentError is a decision, not a crash: its one line is the dead-letter WARN in record().
      if (o.logHandlerErrors && result !== 'permanent') {
        const job = t.job;
        o.logger.error(`${o.name} failed on job ${job.id} (attempt ${job.attempts}/${job.maxAttempts})`, error);
      }
    }
    if (this.host.stopped() || t.leaseLost || t.cancelled) {
      // Someone else owns the job now (or shutdown let go of it); its outcome is theirs to write.
      this.host.untrack(t);
      return;
    }
    this.unsettled += 1;
    if (result === 'ok') {
      t.outcome = null;
      t.state = 'recording';
      this.queueAck(t);
    } else {
      const failure: FailureKind =
        result === 'permanent' ? 'permanent' : result === 'timeout' ? 'timeout' : 'transient';
      void this.record(t, decideSafely(o, t.job, failure, error));
    }
  }

  /** The claim of `t` lapsed (a fenced write or heartbeat): a running handler is aborted, anything else let go. */
  loseLease(t: Tracked): void {
    if (t.leaseLost || t.state === 'finished') return;
    if (t.cancelled) return this.settled(t);
    const o = this.host.o;
    t.leaseLost = true;
    o.logger.warn(`${o.name}: lost the claim of job ${t.job.id}; another worker may run it again`);
    this.host.obs?.leaseLost?.(t.job);
    if (t.state === 'running') {
      // The slot stays taken until the handler settles (settle() untracks it).
      abortJob(t, new LeaseLostAbort());
    } else {
      this.settled(t);
    }
  }

  /** The worker abandons `t` (reported to the observer) and lets go of it. */
  giveUp(t: Tracked, reason: AbandonReason): void {
    this.host.obs?.abandoned?.(t.job, reason);
    this.settled(t);
  }

  /** Shutdown: rewrites every failed outcome at once and sends the queued acks without waiting for the turn to end. */
  writeNow(): void {
    this.rewriteUnrecorded();
    this.acks.flush();
  }

  /** Stops the timed rewrite (the drain rewrites by itself). */
  clearTimer(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  private acksLanded(items: readonly Tracked[], count: number): void {
    const { o, obs } = this.host;
    this.host.health.ok();
    // Fenced acks (the claim lapsed, the job may run again) changed nothing; ackBatch says how many, not which.
    const lost = Math.max(0, items.length - count);
    if (lost > 0 && !this.host.stopped()) {
      // The documented at-least-once window, counted by `leaseLost`: not a warning.
      o.logger.log(
        `${o.name}: ${lost} of ${items.length} ack(s) came after the claim lapsed; those jobs may run again`,
      );
      for (let i = 0; i < lost; i++) obs?.leaseLost?.(null);
    }
    for (const t of items) this.settled(t);
    // Held-back claims may resume.
    if (this.host.backlog()) this.host.kick();
  }

  /** A failed ack write is kept for a retry, within one lease from its first failure. */
  private acksFailed(items: readonly Tracked[], err: unknown): void {
    if (this.host.stopped()) {
      for (const t of items) this.settled(t);
      return;
    }
    if (this.host.health.note(`recording the ack of ${items.length} job(s)`, err)) {
      for (const t of items) this.giveUp(t, 'outcome-write');
      return;
    }
    for (const t of items) this.keepForRetry(t);
  }

  /** An ack joins the coalesced `ackBatch`, unless it records an outcome (a result, progress, a waiter): then its own `job.ack(result)`. */
  private queueAck(t: Tracked): void {
    if (needsOutcome(t.job, keeps(this.host.o.keepResults, t.job) ? t.result : undefined)) void this.ackWithResult(t);
    else this.acks.add(t);
  }

  /** One ack with its result, fenced like every outcome; a result the codec refuses dead-letters the job (running it again would not help). */
  private async ackWithResult(t: Tracked): Promise<void> {
    const { o, health } = this.host;
    let landed: boolean;
    try {
      landed = await withTimeout(
        t.job.ack(keeps(o.keepResults, t.job) ? t.result : undefined),
        o.storeTimeoutMs,
        'ack',
      );
      health.ok();
    } catch (err) {
      if (err instanceof Codec || err instanceof PayloadTooLarge)
        return this.record(t, { kind: 'dead', reason: 'permanent', error: err });
      if (this.host.stopped()) return this.settled(t);
      if (health.note(`recording the ack of job ${t.job.id}`, err)) return this.giveUp(t, 'outcome-write');
      return this.keepForRetry(t);
    }
    if ((t.state as TrackedState) === 'finished') return;
    if (!landed) return this.loseLease(t);
    this.settled(t);
    if (this.host.backlog()) this.host.kick();
  }

  /** Writes a retry or dead-letter outcome, fenced by the claim token. */
  private async record(t: Tracked, outcome: FailureOutcome): Promise<void> {
    const { o, obs, health } = this.host;
    t.outcome = outcome;
    t.state = 'recording';
    let landed: boolean;
    try {
      const write =
        outcome.kind === 'retry'
          ? t.job.retry(outcome.error, outcome.delayMs)
          : outcome.kind === 'release'
            ? t.job.release()
            : t.job.fail(outcome.error);
      landed = await withTimeout(write, o.storeTimeoutMs, outcome.kind === 'dead' ? 'fail' : outcome.kind);
      health.ok();
    } catch (err) {
      if (this.host.stopped()) return this.settled(t);
      if (health.note(`writing the outcome of job ${t.job.id}`, err)) return this.giveUp(t, 'outcome-write');
      return this.keepForRetry(t);
    }
    if ((t.state as TrackedState) === 'finished') return;
    if (!landed) {
      // Fenced: the lease lapsed and the job was (or may be) reclaimed. Zero rows changed.
      this.loseLease(t);
      return;
    }
    const dead =
      outcome.kind === 'dead'
        ? outcome.reason
        : outcome.kind === 'retry' && outcome.delayMs === undefined && t.job.attempts >= t.job.maxAttempts
          ? 'exhausted'
          : null;
    if (dead !== null) {
      o.logger.warn(
        deadLetterLine(
          `${o.name}: job ${t.job.id} of queue ${JSON.stringify(o.queue.name)}`,
          t.job,
          dead,
          outcome.error,
        ),
      );
      obs?.dead?.(t.job, dead, outcome.error);
    } else if (outcome.kind === 'retry') obs?.retried?.(t.job, outcome.reason, outcome.error);
    this.settled(t);
  }

  private keepForRetry(t: Tracked): void {
    const o = this.host.o;
    const now = performance.now();
    let since = this.failingSince.get(t);
    if (since === undefined) this.failingSince.set(t, (since = now));
    if (now - since >= t.leaseMs) {
      o.logger.warn(
        `${o.name}: giving up on the outcome of job ${t.job.id} after ${Math.round(t.leaseMs)} ms; it runs again after its claim lapses`,
      );
      this.giveUp(t, 'outcome-write');
      return;
    }
    t.state = 'unrecorded';
    this.unrecorded.push(t);
    this.scheduleRewrite();
  }

  private scheduleRewrite(): void {
    if (this.retryTimer || this.unrecorded.length === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.rewriteUnrecorded();
    }, this.host.health.backoffMs());
  }

  private rewriteUnrecorded(): void {
    const due = this.unrecorded;
    this.unrecorded = [];
    for (const t of due) {
      if (t.state !== 'unrecorded') continue;
      if (t.outcome === null) {
        t.state = 'recording';
        this.queueAck(t);
      } else {
        void this.record(t, t.outcome);
      }
    }
  }

  /** The outcome of `t` landed (or was dropped): it no longer counts against the claim capacity. */
  private settled(t: Tracked): void {
    if (t.state === 'recording' || t.state === 'unrecorded') {
      this.unsettled -= 1;
      // A claim loop held back by unsettled outcomes may go on (acks, retries and dead-letters alike).
      if (this.host.heldBack()) this.host.scheduleKick();
    }
    this.host.untrack(t);
  }
}

/** Whether the handler's return value is acked as the result: with `keepResults`, and always for a job of a flow (its dependents read it). */
function keeps(keepResults: boolean | undefined, job: { readonly headers: Readonly<Record<string, string>> }): boolean {
  return keepResults === true || job.headers[FLOW_HEADER] !== undefined;
}
