import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { AlreadyRunning } from '../contract/errors.js';
import type { ClaimOpts, Job } from '../contract/types.js';
import { MAX_BATCH } from '../contract/validate.js';
import { FOLLOWING_CLAIM, nextDueOf } from '../internal/next-due.js';
import { errorText } from '../internal/outbox-handle.js';
import { sleep } from '../internal/sleep.js';
import { AdaptivePrefetch } from './adaptive-prefetch.js';
import { callHandler, singleCaller, type HandlerCallSink } from './handler-call.js';
import { CancelWatch } from './cancel-watch.js';
import { HandoffTaker } from './handoff-taker.js';
import { LeaseRenewal } from './lease-renewal.js';
import { OutcomeWriter } from './outcome-writer.js';
import { PrefetchBuffer } from './prefetch-buffer.js';
import { mayReadSignal } from './signal-use.js';
import { sampleStats } from './stats-sampler.js';
import { StoreHealth } from './store-health.js';
import { ChangeLatch, withTimeout } from './timers.js';
import { abortJob, giveController, grantedLease, Tracked, TrackedSet } from './tracked.js';
import { validateWorkerCoreOptions, type WorkerCoreOptions } from './worker-options.js';
import { guardObserver, type WorkerObserver } from './worker-observer.js';
import { WorkWait } from './work-wait.js';

// The option types were declared here before the split; lib/outbox and lib/tracing import them from this path.
export {
  isPermanent,
  type BatchOutcomes,
  type FailureKind,
  type FailureOutcome,
  type HandlerWrapper,
  type WorkerCoreOptions,
} from './worker-options.js';

/** One controller shared by the jobs that start in one turn (`turnSignals`): a listener per job in flight is expected, not a leak. */
function turnController(): AbortController {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  return ac;
}

/** What {@link WorkerCore.claimRound} returns to end the claim loop, and to claim again without waiting. */
const STOP = -1;
const AGAIN = -2;

/**
 * The one worker loop under the outbox dispatcher and the queue worker:
 * claim sizing (free slots + prefetch, bounded by `maxClaim`; the prefetch
 * fixed or chosen by {@link AdaptivePrefetch}), a prefetch buffer whose jobs
 * are released at half their lease ({@link PrefetchBuffer}), handler calls with an
 * optional timeout and abort signal, acks coalesced into `ackBatch` and fenced
 * retry/dead writes with retries within the lease ({@link OutcomeWriter}), lease
 * renewal of every claim in flight ({@link LeaseRenewal}), store-error backoff, an
 * abortable wait woken by the queue's commits and by freed slots ({@link WorkWait}),
 * idle hand-offs from this store's enqueues ({@link HandoffTaker}), and a drain that
 * releases what never started. Metrics, events and tracing hook in through
 * `observer` and `wrap`. Built only on the public `Queue`/`Job` contract.
 */
export class WorkerCore {
  private readonly o: WorkerCoreOptions;
  /** `o.observer` with every hook guarded (see {@link guardObserver}). */
  private readonly obs: WorkerObserver | null;
  private readonly batchMode: boolean;
  /** Options of every claim: the lease override, and the mark of a worker's claim (`FOLLOWING_CLAIM`: it claims again on its own schedule). */
  private readonly claimOpts: ClaimOpts;
  private readonly tracked = new TrackedSet();
  private readonly buffer: PrefetchBuffer;
  private readonly outcomes: OutcomeWriter;
  private readonly leases: LeaseRenewal;
  /** Where every handler call reports (one object, so a call allocates no callbacks). */
  private readonly callSink: HandlerCallSink = {
    measured: (durationMs) => this.auto?.handled(durationMs),
    settle: (t, result, error, durationMs) => this.outcomes.settle(t, result, error, durationMs),
    failed: (items, err) => {
      this.o.logger.error(`${this.o.name}: bookkeeping of job ${items[0]!.job.id} failed`, err);
      for (const t of items) if (t.state === 'running') this.untrack(t);
    },
    done: () => {
      this.runningCalls -= 1;
      this.changed.fire();
      this.buffer.startReady();
      this.slotFreed();
      this.handoff.refill();
    },
  };
  /** The call of a single handler without `wrap` or a timeout; null when those do not apply. */
  private readonly callSingle: ((t: Tracked, signal: AbortSignal, timed: boolean) => void) | null;
  private readonly handoff: HandoffTaker;
  private readonly waits: WorkWait;
  private readonly health: StoreHealth;
  /** Aborts handlers of jobs cancelled from any process (`watchCancels`), else null. */
  private readonly cancels: CancelWatch | null;
  /** Handler calls in flight (a batch counts once). */
  private runningCalls = 0;
  /** Sizes the buffer when the prefetch is adaptive; null: `o.prefetch` as given. */
  private readonly auto: AdaptivePrefetch | null;
  private readonly changed = new ChangeLatch();
  private sharedAbort = new AbortController();
  /**
   * Each handler call gets an AbortController of its own (`jobSignals`, and a handler that can read its
   * signal, see {@link mayReadSignal}); otherwise every call gets the shared one.
   */
  private readonly callSignals: boolean;
  /** `turnSignals` in use: the jobs that start in one event-loop turn share {@link turnAbort}. */
  private readonly perTurn: boolean;
  /** With `turnSignals`: the controller of the jobs started in this event-loop turn so far, or null. */
  private turnAbort: AbortController | null = null;
  /** When {@link turnAbort} was made (performance.now()). */
  private turnAt = 0;
  /** How far apart (ms) the starts sharing {@link turnAbort} may be: 1 % of `handlerTimeoutMs`, at least 1. */
  private readonly turnWindowMs: number;
  private readonly endTurn = (): void => {
    this.turnAbort = null;
  };
  private backlog = false;
  /** The claim loop is waiting because it has no capacity (slots taken or too many outcomes unsettled). */
  private heldBack = false;
  private ranSinceDrained = false;
  /** The drain gave up: late handler results and writes are dropped. */
  private stopped = false;
  private stopping = false;
  private active = false;
  /** Set while {@link run} runs: its stop signal (a hand-off arriving after it aborted is released). */
  private stopSignal: AbortSignal | null = null;

  /**
   * Checks every option before anything else (no claim, no listen):
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming the option for a number out of
   *   range: `batchSize` (1..10 000), `concurrency` (>= 1), `ackWrites` (1..16), `prefetch` / `autoPrefetchMax` (>= 0), `maxClaim`
   *   (1..10 000), `leaseMs`, `handlerTimeoutMs`, `storeTimeoutMs`, `pollIntervalMs`, `idlePollIntervalMs`,
   *   `firstBackoffMs`, `maxBackoffMs` (>= `firstBackoffMs`), `statsIntervalMs` (integers in 1..2^31-1),
   *   `drainTimeoutMs`, `minOutcomeDrainMs` (integers in 0..2^31-1).
   * @throws InvalidOption (code `INVALID_OPTION`) naming the option for a wrong shape: options not an object,
   *   `queue` without `name`/`claimBatch`/`ackBatch`/`listen`/`stats`, not exactly one of `handler` and
   *   `batchHandler` a function, `batchSize` without `batchHandler`, `prefetch` > 0 with `batchHandler`, a
   *   non-boolean `renewLeases`/`jobSignals`/`releaseOnDrainTimeout`/`logHandlerErrors`/`localHandoff`,
   *   `decide`/`timeoutError`/`wrap` not a function, a blank `name` or `workerId`, `logger` without
   *   `log`/`warn`/`error`, `observer` not an object (or null) of function hooks.
   */
  constructor(options: WorkerCoreOptions) {
    validateWorkerCoreOptions(options);
    const o = options;
    this.o = o;
    this.obs = guardObserver(o.observer, o.logger, o.name);
    this.batchMode = o.batchHandler !== undefined;
    const following: ClaimOpts & { [FOLLOWING_CLAIM]: true } =
      o.leaseMs === undefined ? { [FOLLOWING_CLAIM]: true } : { leaseMs: o.leaseMs, [FOLLOWING_CLAIM]: true };
    this.claimOpts = following;
    this.callSignals = o.jobSignals && mayReadSignal(this.batchMode ? o.batchHandler : o.handler);
    this.perTurn = this.callSignals && !this.batchMode && o.turnSignals === true;
    this.turnWindowMs = Math.max(1, Math.floor((o.handlerTimeoutMs ?? 0) / 100));
    this.callSingle = this.batchMode || o.wrap ? null : singleCaller(o, this.callSink);
    const autoMax = o.autoPrefetchMax ?? 0;
    this.auto =
      autoMax > 0 && !this.batchMode && o.prefetch === 0
        ? new AdaptivePrefetch({ concurrency: o.concurrency, max: autoMax })
        : null;
    this.waits = new WorkWait(o.queue, o.name, o.logger, o.idlePollIntervalMs);
    this.health = new StoreHealth(o.name, o.logger, o.firstBackoffMs, o.maxBackoffMs, () => this.waits.kick());
    this.buffer = new PrefetchBuffer({
      hasFreeSlot: () => this.runningCalls < this.o.concurrency,
      stopping: () => this.stopping,
      start: (t) => this.execute([t]),
      expired: (late) => {
        this.auto?.overran();
        void this.releaseBuffered(late, 'they waited half their lease for a free slot');
      },
      slotFreed: () => this.slotFreed(),
    });
    this.outcomes = new OutcomeWriter({
      o,
      obs: this.obs,
      health: this.health,
      // One ackBatch takes at most MAX_BATCH ids: more completions than that (behind a slow write) go out in several.
      maxAckBatch: Math.min(
        MAX_BATCH,
        Math.max(1, o.maxClaim, o.concurrency + o.prefetch, this.auto ? o.concurrency + autoMax : 0),
      ),
      stopped: () => this.stopped,
      untrack: (t) => this.untrack(t),
      heldBack: () => this.heldBack,
      backlog: () => this.backlog,
      kick: () => this.waits.kick(),
      scheduleKick: () => this.waits.scheduleKick(),
    });
    this.leases = new LeaseRenewal({
      tracked: () => this.tracked,
      stopped: () => this.stopped,
      storeTimeoutMs: o.storeTimeoutMs,
      loseLease: (t) => this.outcomes.loseLease(t),
      storeError: (operation, err) => void this.health.note(operation, err),
    });
    this.cancels = o.watchCancels
      ? new CancelWatch({
          queue: o.queue,
          name: o.name,
          logger: o.logger,
          pollMs: o.cancelPollMs ?? 1000,
          tracked: () => this.tracked,
          cancelled: (t, reason) => {
            t.cancelled = true;
            this.obs?.cancelled?.(t.job);
            abortJob(t, reason);
          },
        })
      : null;
    this.handoff = new HandoffTaker(
      {
        queue: o.queue,
        workerId: o.workerId,
        leaseMs: o.leaseMs ?? null,
        stopping: () => this.stopping,
        mayReserve: (reserved) => this.mayReserveHandoff(reserved),
        delivered: (job, claimStarted) => this.handedOff(job, claimStarted),
        changed: () => this.changed.fire(),
        slotFreed: () => this.slotFreed(),
      },
      o.localHandoff === true,
    );
  }

  /** Jobs claimed and not yet handed to a handler, plus those whose handler runs. */
  get inFlight(): number {
    let n = this.buffer.length;
    for (const t of this.tracked) if (t.state === 'running') n += 1;
    return n;
  }

  /**
   * Aborts the signal of every handler call running now with `reason` (each job's own signal with
   * `jobSignals`, else the shared one, which is renewed for later calls). Their outcomes are written as
   * usual when the handlers settle.
   */
  abortRunning(reason: unknown): void {
    if (!this.callSignals) {
      const shared = this.sharedAbort;
      this.sharedAbort = new AbortController();
      shared.abort(reason);
      return;
    }
    for (const t of this.tracked) if (t.state === 'running') abortJob(t, reason);
  }

  /** The prefetch in use: as configured, or the adaptive choice of the moment. */
  get prefetch(): number {
    return this.auto ? this.auto.current : this.o.prefetch;
  }

  /** True while {@link run} has not resolved. */
  get running(): boolean {
    return this.active;
  }

  /**
   * Runs until `signal` aborts (or the store closes), then drains and resolves.
   * Store errors are logged and backed off, never thrown.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.active) throw new AlreadyRunning(this.o.name);
    this.active = true;
    this.stopped = false;
    this.stopping = false;
    this.health.reset();
    this.backlog = false;
    if (this.sharedAbort.signal.aborted) this.sharedAbort = new AbortController();
    this.stopSignal = signal;
    const background = new AbortController();
    const onAbort = (): void => this.waits.kick();
    try {
      if (signal.aborted) return;
      signal.addEventListener('abort', onAbort, { once: true });
      this.waits.open();
      this.cancels?.start();
      const o = this.o;
      const stats = sampleStats(
        o.queue,
        this.obs,
        o.statsIntervalMs,
        o.storeTimeoutMs,
        o.name,
        o.logger,
        background.signal,
      );
      const started = { at: 0 };
      try {
        await this.claimLoop(signal);
      } finally {
        started.at = performance.now();
        this.handoff.leave();
        this.stopping = true;
        await this.drain(started.at);
        background.abort();
        await stats;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      background.abort();
      this.handoff.leave();
      this.stopSignal = null;
      this.clearTimers();
      this.waits.close();
      await this.cancels?.close();
      this.active = false;
    }
  }

  // ---- claiming ---------------------------------------------------------------------------------

  private async claimLoop(stop: AbortSignal): Promise<void> {
    while (!stop.aborted && !this.health.closed) {
      // A slot offered to other processes comes back (or brings its job) before the slots are counted.
      this.handoff.leave();
      const withdrawn = this.handoff.withdrawn();
      if (withdrawn) await withdrawn;
      const free = this.freeSlots();
      if (free <= 0) {
        // Freed slots and settled outcomes (a landed ack, retry or dead-letter write) cut this short.
        this.heldBack = true;
        const woken = await this.waits.wait(this.o.idlePollIntervalMs, this.stopping);
        this.heldBack = false;
        if (woken) this.backlog = true;
        continue;
      }
      const next = await this.claimRound(Math.min(this.o.maxClaim, free), stop);
      if (next === STOP) break;
      if (next === AGAIN) continue;
      // Short claim, free slots: idle. Fresh enqueues of this store may come straight here.
      this.handoff.join();
      if (await this.waits.wait(next, this.stopping)) this.backlog = true;
    }
  }

  /**
   * One claim of up to `want` jobs, started or buffered: {@link STOP} ends the loop, {@link AGAIN} claims
   * again at once, a number is how long to wait first (ms). A function of its own, so the claim's array
   * (and every job it brought) is not held by the loop's frame while it waits.
   */
  private async claimRound(want: number, stop: AbortSignal): Promise<number> {
    // Claiming: hand-offs would race this claim for the same slots.
    this.handoff.leave();
    // The lease of what comes back is timed from here, before the claim is sent (never later than the database's start).
    const claimStarted = performance.now();
    let jobs: Job[];
    try {
      jobs = await this.claim(want);
      this.health.ok();
    } catch (err) {
      if (stop.aborted) return STOP;
      if (this.health.note('claimBatch', err)) return STOP;
      await sleep(this.health.backoffMs(), stop);
      return AGAIN;
    }
    if (jobs.length > 0) {
      this.obs?.claimed?.(jobs.length);
      this.ranSinceDrained = true;
    } else if (this.ranSinceDrained) {
      this.ranSinceDrained = false;
      this.obs?.drained?.();
    }
    if (stop.aborted) {
      // Claimed after shutdown began: never started, so hand them back with their attempt.
      await this.releaseJobs(jobs, null);
      return STOP;
    }
    if (this.auto) {
      // Starved: a slot sat idle with nothing buffered while this claim was on its way.
      const starved = this.runningCalls < this.o.concurrency && this.buffer.length === 0;
      this.auto.claimed(want, jobs.length, performance.now() - claimStarted, this.shortestLease(jobs), starved);
    }
    this.take(jobs, claimStarted);
    // A full claim: more is probably ready. Claim again at once, or wait for a freed slot.
    this.backlog = jobs.length === want;
    if (this.backlog && this.freeSlots() > 0) return AGAIN;
    const poll = jobs.length === 0 ? this.o.idlePollIntervalMs : this.o.pollIntervalMs;
    // A job that falls due by time sends no wake: wait no longer than until the next run_at the claim reported
    // (a database duration, timed from now, when the claim has returned: never early, late by at most a round trip).
    const nextDue = nextDueOf(jobs);
    return nextDue === null || nextDue === undefined ? poll : Math.max(1, Math.min(poll, Math.ceil(nextDue) + 1));
  }

  /**
   * How many jobs the next claim may take: the free capacity (`concurrency + prefetch` minus
   * running and buffered jobs; in batch mode one batch per free call slot), 0 while the buffer
   * is above half the prefetch or while more than that capacity of outcomes is unrecorded.
   */
  private freeSlots(): number {
    const unsettled = this.outcomes.unsettled;
    const reserved = this.handoff.reserved;
    if (this.batchMode) {
      const size = this.o.batchSize ?? 1;
      if (unsettled > this.o.concurrency * size) return 0;
      return this.runningCalls + reserved < this.o.concurrency ? size : 0;
    }
    const prefetch = this.prefetch;
    const capacity = this.o.concurrency + prefetch;
    if (unsettled > capacity) return 0;
    if (this.buffer.length > Math.floor(prefetch / 2)) return 0;
    return Math.max(0, capacity - this.runningCalls - this.buffer.length - reserved);
  }

  /** The shortest lease among freshly claimed jobs (ms), as {@link track} computes it; null for none. */
  private shortestLease(jobs: readonly Job[]): number | null {
    if (this.o.leaseMs !== undefined) return this.o.leaseMs;
    let least: number | null = null;
    for (const job of jobs) {
      const ms = grantedLease(job, this.o.queue);
      if (least === null || ms < least) least = ms;
    }
    return least;
  }

  private async claim(max: number): Promise<Job[]> {
    const pending = this.o.queue.claimBatch(max, this.o.workerId, this.claimOpts);
    try {
      return await withTimeout(pending, this.o.storeTimeoutMs, 'claimBatch');
    } catch (err) {
      // A claim that lands after we gave up on it would strand its jobs until their lease: hand them back.
      pending.then(
        (late) => this.releaseJobs(late, null),
        () => undefined,
      );
      throw err;
    }
  }

  private track(job: Job, claimStarted: number): Tracked {
    // The granted lease, timed from before the claim was sent (never later than the database's start).
    const t = new Tracked(job, this.o.leaseMs ?? grantedLease(job, this.o.queue), claimStarted);
    this.tracked.add(t);
    return t;
  }

  /** Starts what free slots allow of a fresh claim and buffers the rest. */
  private take(jobs: readonly Job[], claimStarted: number): void {
    if (jobs.length === 0) return;
    if (this.batchMode) {
      this.execute(jobs.map((job) => this.track(job, claimStarted)));
      return;
    }
    for (const job of jobs) {
      const t = this.track(job, claimStarted);
      if (this.runningCalls < this.o.concurrency && this.buffer.length === 0) this.execute([t]);
      else this.buffer.push(t);
    }
    this.buffer.startReady();
  }

  // ---- local hand-off -------------------------------------------------------------------------

  /** A slot that starts a handed-off job at once (no buffering of handed-off jobs), unless claimed work waits. */
  private mayReserveHandoff(reserved: number): boolean {
    if (this.stopping || this.health.closed || this.stopSignal === null || this.stopSignal.aborted) return false;
    // Jobs are probably ready already (a full claim, a wake while the slots were taken): they go first.
    if (this.backlog) return false;
    const unsettled = this.outcomes.unsettled;
    if (this.batchMode) {
      const size = this.o.batchSize ?? 1;
      return !(unsettled > this.o.concurrency * size || this.runningCalls + reserved >= this.o.concurrency);
    }
    if (unsettled > this.o.concurrency + this.prefetch) return false;
    return this.runningCalls + this.buffer.length + reserved < this.o.concurrency;
  }

  /** A job an enqueue of this store inserted claimed by this worker: as if a claim had returned it. */
  private handedOff(job: Job, claimStarted: number): Promise<void> | null {
    this.obs?.claimed?.(1);
    if (this.stopping || this.stopped || !this.active || this.stopSignal?.aborted !== false) {
      // Stop began while it was in flight: never started, so give it back with its attempt.
      return this.releaseJobs([job], 'the worker is stopping');
    }
    this.ranSinceDrained = true;
    this.take([job], claimStarted);
    return null;
  }

  // ---- running handlers ------------------------------------------------------------------------

  private execute(items: Tracked[]): void {
    this.runningCalls += 1;
    for (const t of items) t.state = 'running';
    if (this.o.renewLeases) this.leases.schedule(items[0]!.dueAt);
    const timed = this.obs !== null || this.o.handlerTimeoutMs !== undefined || this.auto !== null;
    if (this.callSingle) this.callSingle(items[0]!, this.signalFor(items), timed);
    else void callHandler(this.o, this.batchMode, items, this.signalFor(items), timed, this.callSink);
  }

  private signalFor(items: Tracked[]): AbortSignal {
    if (!this.callSignals) return this.sharedAbort.signal;
    if (this.perTurn) {
      let ac = this.turnAbort;
      const now = performance.now();
      // At most 1 % of the timeout apart: a job aborted by another's timeout ran at least 99 % of its own.
      if (ac === null || ac.signal.aborted || now - this.turnAt > this.turnWindowMs) {
        ac = this.turnAbort = turnController();
        this.turnAt = now;
        // The turn ends after this phase of the event loop: later starts get a controller of their own.
        setImmediate(this.endTurn);
      }
      giveController(items, ac);
      return ac.signal;
    }
    const ac = new AbortController();
    giveController(items, ac);
    return ac.signal;
  }

  // ---- letting go -------------------------------------------------------------------------------

  /** Gives buffered (never started) jobs back: pending at once, attempt returned. */
  private async releaseBuffered(items: readonly Tracked[], why: string): Promise<void> {
    if (items.length === 0) return;
    const line = `${this.o.name}: releasing ${items.length} buffered job(s) that never started: ${why}`;
    // On shutdown this is the normal path; while running it means the prefetch outruns the handlers.
    if (this.stopping) this.o.logger.log(line);
    else this.o.logger.warn(line);
    for (const t of items) this.untrack(t);
    await this.releaseJobs(
      items.map((t) => t.job),
      null,
    );
  }

  private async releaseJobs(jobs: readonly Job[], why: string | null): Promise<void> {
    if (jobs.length === 0) return;
    const results = await Promise.allSettled(
      jobs.map((job) => withTimeout(job.release(), this.o.storeTimeoutMs, 'release')),
    );
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length > 0) {
      this.o.logger.warn(
        `${this.o.name}: could not release ${failed.length} job(s)${why ? ` (${why})` : ''}: ` +
          `${errorText(failed[0]!.reason)}; they return after their claims lapse`,
      );
    }
  }

  private untrack(t: Tracked): void {
    t.state = 'finished';
    if (this.tracked.delete(t)) this.changed.fire();
    // Idle: the freed handler slot is offered to other processes' enqueues again.
    this.handoff.refill();
  }

  /** Wakes the loop to claim for freed slots, once per event-loop turn, when more work is probably ready. */
  private slotFreed(): void {
    if (this.backlog) this.waits.scheduleKick();
  }

  // ---- shutdown -----------------------------------------------------------------------------------

  /** Claiming has stopped: release the buffer, wait for handlers up to the drain timeout, then for outcome writes. */
  private async drain(startedAt: number): Promise<void> {
    const releasing = this.releaseBuffered(this.buffer.takeAll(), 'the worker is stopping');
    const deadline = startedAt + this.o.drainTimeoutMs;
    // Hand-offs in flight land (a job arriving now is released) or fall back; handlers run as usual.
    while (this.runningCalls > 0 || this.handoff.reserved > 0) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      await this.changed.wait(left);
    }
    await releasing;
    await this.handoff.released();
    if (this.runningCalls > 0) {
      const left = [...this.tracked].filter((t) => t.state === 'running');
      const reason = new Error(this.o.stopMessage);
      for (const t of left) {
        this.obs?.abandoned?.(t.job, 'drain');
        this.untrack(t);
        abortJob(t, reason);
      }
      if (!this.callSignals) this.sharedAbort.abort(reason);
      if (this.o.releaseOnDrainTimeout && left.length > 0) {
        this.o.logger.warn(
          `${this.o.name}: ${left.length} job(s) still running after the ${this.o.drainTimeoutMs} ms drain; releasing them`,
        );
        await this.releaseJobs(
          left.map((t) => t.job),
          'drain timeout',
        );
      }
    }
    // Outcome writes: retry failed ones at once, within what is left (and at least minOutcomeDrainMs).
    this.outcomes.clearTimer();
    const writeDeadline = Math.max(deadline, performance.now() + this.o.minOutcomeDrainMs);
    while (this.outcomes.unsettled > 0 && !this.health.closed) {
      const left = writeDeadline - performance.now();
      if (left <= 0) break;
      this.outcomes.writeNow();
      await this.changed.wait(this.outcomes.waitingRewrite > 0 ? Math.min(left, this.health.backoffMs()) : left);
    }
    this.stopped = true;
    this.clearTimers();
    const leftover = [...this.tracked];
    if (leftover.length > 0) {
      const unwritten = leftover.filter((t) => t.state !== 'running').length;
      if (unwritten > 0)
        this.o.logger.warn(
          `${this.o.name}: ${unwritten} outcome(s) not recorded by shutdown; those jobs run again after their claims lapse`,
        );
      const reason = new Error(this.o.stopMessage);
      for (const t of leftover) {
        abortJob(t, reason);
        this.outcomes.giveUp(t, 'drain');
      }
    }
    await this.leases.settled();
  }

  private clearTimers(): void {
    this.outcomes.clearTimer();
    this.buffer.clearTimer();
    this.leases.clearTimer();
  }
}
