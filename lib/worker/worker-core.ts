import { performance } from 'node:perf_hooks';
import { AlkstoreError, AlreadyRunning, InvalidArgument, InvalidOption, PermanentError } from '../contract/errors.js';
import type { Job, Queue, StoreLogger, WakeReceiver } from '../contract/types.js';
import { asOption, MAX_BATCH, requireBatchSize, requireBoolean, requireCount, requireDurationMs, requireInt, requireTimerMs } from '../contract/validate.js';
import { deadLetterLine } from '../internal/dead-letter-log.js';
import { handoffPoint, type HandoffSlot } from '../internal/handoff.js';
import { nextDueOf } from '../internal/next-due.js';
import { errorText } from '../internal/outbox-handle.js';
import { sleep } from '../internal/sleep.js';
import { AckBatcher } from './ack-batcher.js';
import { AdaptivePrefetch } from './adaptive-prefetch.js';
import { ChangeLatch, withTimeout } from './timers.js';
import { guardObserver, type AbandonReason, type DeadReason, type HandlerResult, type RetryReason, type WorkerObserver } from './worker-observer.js';

/** How a handler call failed. */
export type FailureKind = 'transient' | 'timeout' | 'permanent';

/**
 * What to write for a failed job: `retry` (with `delayMs`, or the store's
 * stamped backoff when undefined; the store dead-letters a job whose attempts
 * are exhausted) or `dead` at once with `error` as its last error.
 */
export type FailureOutcome =
  | { readonly kind: 'retry'; readonly reason: RetryReason; readonly delayMs: number | undefined; readonly error: unknown }
  | { readonly kind: 'dead'; readonly reason: DeadReason; readonly error: unknown };

/**
 * A batch handler's answer: nothing (every job succeeded) or one entry per
 * job, in order: an `Error` retries that job (`PermanentError` dead-letters
 * it), anything else acks it.
 */
export type BatchOutcomes = readonly unknown[] | void | undefined | null;

/** Runs a handler call inside a context (a tracing span, a correlation id); must return what `run` returns. */
export type HandlerWrapper = (jobs: readonly Job[], run: () => Promise<unknown>) => Promise<unknown>;

/** Configuration of {@link WorkerCore}; the outbox dispatcher and the queue worker each fill it their way. */
export interface WorkerCoreOptions {
  readonly queue: Queue;
  /** Prefix of every log line, e.g. `outbox "orders"` or `@QueueHandler Mailer.send`. */
  readonly name: string;
  /** Called once per job. Exactly one of `handler` and `batchHandler`. */
  readonly handler?: (job: Job, signal: AbortSignal) => unknown;
  /** Called with up to `batchSize` jobs at once; see {@link BatchOutcomes}. */
  readonly batchHandler?: (jobs: Job[], signal: AbortSignal) => unknown;
  /** Jobs per batch handler call (batch mode only). */
  readonly batchSize?: number;
  /** Handler calls running at once. */
  readonly concurrency: number;
  /** Claimed jobs held on top of `concurrency` in a local buffer (single-job mode only). */
  readonly prefetch: number;
  /**
   * Adaptive prefetch (single-job mode, `prefetch` 0): the worker sizes its buffer by itself between 0 and
   * this many jobs (see {@link AdaptivePrefetch}); 0 or undefined = off, `prefetch` is used as given.
   */
  readonly autoPrefetchMax?: number;
  /** Largest single claim. */
  readonly maxClaim: number;
  /** Lease of each claim (ms); undefined = the job's stamped visibility timeout. */
  readonly leaseMs: number | undefined;
  /** Heartbeat claims in flight every half lease, so a long handler keeps its job. */
  readonly renewLeases: boolean;
  /** Abort (and fail with `timeoutError`) a handler call that runs longer than this. */
  readonly handlerTimeoutMs?: number;
  readonly timeoutError?: (ms: number) => Error;
  /** One AbortController per job (aborted on timeout, lost lease, drain) instead of one shared by all. */
  readonly jobSignals: boolean;
  /** Bound of every store call (a hung call counts as failed). */
  readonly storeTimeoutMs: number;
  /** Wait after a claim that returned some jobs but fewer than asked. */
  readonly pollIntervalMs: number;
  /** Wait after an empty claim (wakes cut it short). */
  readonly idlePollIntervalMs: number;
  /** First pause after a store error; doubles per consecutive error up to `maxBackoffMs`. */
  readonly firstBackoffMs: number;
  readonly maxBackoffMs: number;
  readonly drainTimeoutMs: number;
  /** Outcome writes get at least this long on shutdown, even past the drain timeout. */
  readonly minOutcomeDrainMs: number;
  /** After the drain timeout, `release()` still-running jobs (claimable again at once) instead of leaving them to their lease. */
  readonly releaseOnDrainTimeout: boolean;
  /** Abort reason given to handlers still running when the drain gives up. */
  readonly stopMessage: string;
  /**
   * The outcome of a failed handler call (a retry policy). User code, so guarded: when it throws (or
   * returns something that is not a {@link FailureOutcome}), the worker logs it once at error level naming
   * the job and falls back to the default outcome, the one a pg-boss or BullMQ user gets with no custom
   * retry policy: a `PermanentError` is dead-lettered (reason `permanent`); any other failure is retried with
   * the queue's stamped backoff (`delayMs` undefined), so the store still dead-letters the job once its
   * `maxAttempts` are exhausted. The handler's error is recorded as the job's last error; the worker keeps
   * running.
   */
  readonly decide: (job: Job, failure: FailureKind, error: unknown) => FailureOutcome;
  readonly workerId: string;
  readonly logger: StoreLogger;
  /** Log every handler failure at error level. */
  readonly logHandlerErrors: boolean;
  /** The seam for metrics and events (see {@link combineObservers}); null = none. */
  readonly observer: WorkerObserver | null;
  readonly statsIntervalMs: number;
  readonly wrap?: HandlerWrapper | null;
  /**
   * Take jobs enqueued through this process's store straight from the enqueue while idle (a free slot,
   * the last claim came back short): the enqueue inserts them already claimed by this worker, so no claim
   * statement runs (see `lib/internal/handoff.ts`). Only when the queue handle offers it (the store's
   * `localHandoff`, default on). Default false.
   */
  readonly localHandoff?: boolean;
}

type State = 'buffered' | 'running' | 'recording' | 'unrecorded' | 'finished';

/** A claimed job this worker is responsible for until its outcome lands or it lets go. */
interface Tracked {
  readonly job: Job;
  state: State;
  abort: AbortController | null;
  /** The outcome to write (null: ack). */
  outcome: FailureOutcome | null;
  /** performance.now() of the first failed outcome write. */
  failingSince: number | null;
  leaseLost: boolean;
  renewing: boolean;
  readonly leaseMs: number;
  /** performance.now(): buffered jobs are released here; in-flight ones renewed. */
  dueAt: number;
}

const ACK_LIKE = null;

const QUEUE_METHODS = ['claimBatch', 'ackBatch', 'listen', 'stats'] as const;
const LOGGER_METHODS = ['log', 'warn', 'error'] as const;
const OBSERVER_HOOKS = ['claimed', 'completed', 'failed', 'retried', 'dead', 'leaseLost', 'abandoned', 'drained', 'stats'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function optionalFunction(field: string, v: unknown): void {
  if (v !== undefined && typeof v !== 'function') throw new InvalidOption(field, 'must be a function or undefined');
}

/**
 * Refuses bad {@link WorkerCoreOptions} before any I/O (SPEC §3): numbers out of range are
 * {@link InvalidArgument} naming the option (a `RangeError`, code `INVALID_ARGUMENT`), wrong shapes
 * (functions, objects, strings, booleans) {@link InvalidOption} naming it.
 */
function validateWorkerCoreOptions(o: WorkerCoreOptions): void {
  if (!isObject(o)) throw new InvalidOption('WorkerCore options', 'must be an object');
  const q = o.queue as unknown;
  if (!isObject(q) || typeof q.name !== 'string' || QUEUE_METHODS.some((m) => typeof q[m] !== 'function')) {
    throw new InvalidOption('queue', `must be a Queue (a name and ${QUEUE_METHODS.join(', ')})`);
  }
  if (typeof o.name !== 'string' || o.name.trim().length === 0) throw new InvalidOption('name', 'must be a non-empty string');
  const single = o.handler !== undefined;
  const batch = o.batchHandler !== undefined;
  if (single === batch) throw new InvalidOption('handler', 'exactly one of handler and batchHandler must be given');
  if (single && typeof o.handler !== 'function') throw new InvalidOption('handler', 'must be a function');
  if (batch && typeof o.batchHandler !== 'function') throw new InvalidOption('batchHandler', 'must be a function');
  if (o.batchSize !== undefined) {
    if (!batch) throw new InvalidOption('batchSize', 'applies only with batchHandler');
    requireBatchSize('batchSize', o.batchSize);
  }
  requireCount('concurrency', o.concurrency);
  requireInt('prefetch', o.prefetch, 0, Number.MAX_SAFE_INTEGER);
  if (batch && o.prefetch > 0) throw new InvalidOption('prefetch', 'must be 0 with batchHandler (a batch is claimed per free call slot)');
  if (o.autoPrefetchMax !== undefined) requireInt('autoPrefetchMax', o.autoPrefetchMax, 0, Number.MAX_SAFE_INTEGER);
  requireBatchSize('maxClaim', o.maxClaim);
  if (o.leaseMs !== undefined) requireTimerMs('leaseMs', o.leaseMs);
  if (o.handlerTimeoutMs !== undefined) requireTimerMs('handlerTimeoutMs', o.handlerTimeoutMs);
  requireTimerMs('storeTimeoutMs', o.storeTimeoutMs);
  requireTimerMs('pollIntervalMs', o.pollIntervalMs);
  requireTimerMs('idlePollIntervalMs', o.idlePollIntervalMs);
  requireTimerMs('firstBackoffMs', o.firstBackoffMs);
  requireTimerMs('maxBackoffMs', o.maxBackoffMs);
  if (o.maxBackoffMs < o.firstBackoffMs) throw new InvalidArgument('maxBackoffMs', `must be at least firstBackoffMs (${o.firstBackoffMs}), got ${o.maxBackoffMs}`);
  requireTimerMs('drainTimeoutMs', o.drainTimeoutMs, 0);
  requireTimerMs('minOutcomeDrainMs', o.minOutcomeDrainMs, 0);
  requireTimerMs('statsIntervalMs', o.statsIntervalMs);
  asOption(() => {
    for (const f of ['renewLeases', 'jobSignals', 'releaseOnDrainTimeout', 'logHandlerErrors'] as const) requireBoolean(f, o[f]);
    if (o.localHandoff !== undefined) requireBoolean('localHandoff', o.localHandoff);
  });
  optionalFunction('timeoutError', o.timeoutError);
  if (typeof o.stopMessage !== 'string') throw new InvalidOption('stopMessage', 'must be a string');
  if (typeof o.decide !== 'function') throw new InvalidOption('decide', 'must be a function (job, failure, error) => FailureOutcome');
  if (typeof o.workerId !== 'string' || o.workerId.trim().length === 0) throw new InvalidOption('workerId', 'must be a non-empty string (not blank)');
  const log = o.logger as unknown;
  if (!isObject(log) || LOGGER_METHODS.some((m) => typeof log[m] !== 'function')) throw new InvalidOption('logger', `must be a StoreLogger (${LOGGER_METHODS.join(', ')})`);
  const obs = o.observer as unknown;
  if (obs !== null) {
    if (!isObject(obs)) throw new InvalidOption('observer', 'must be a WorkerObserver object or null');
    for (const h of OBSERVER_HOOKS) optionalFunction(`observer.${h}`, obs[h]);
  }
  if (o.wrap !== undefined && o.wrap !== null && typeof o.wrap !== 'function') throw new InvalidOption('wrap', 'must be a function, null or undefined');
}

/**
 * The one worker loop under the outbox dispatcher and the queue worker:
 * claim sizing (free slots + prefetch, bounded by `maxClaim`; the prefetch
 * fixed or chosen by {@link AdaptivePrefetch}), a prefetch buffer whose jobs
 * are released at half their lease, handler calls with an
 * optional timeout and abort signal, acks coalesced into `ackBatch`, fenced
 * retry/dead writes with retries within the lease, lease renewal of every
 * claim in flight, store-error backoff, an abortable wait woken by the
 * queue's commits and by freed slots, and a drain that releases what never
 * started. Metrics, events and tracing hook in through `observer` and `wrap`.
 * Built only on the public `Queue`/`Job` contract.
 */
export class WorkerCore {
  private readonly o: WorkerCoreOptions;
  /** `o.observer` with every hook guarded (see {@link guardObserver}). */
  private readonly obs: WorkerObserver | null;
  private readonly batchMode: boolean;
  private readonly tracked = new Set<Tracked>();
  private buffer: Tracked[] = [];
  /** Handler calls in flight (a batch counts once). */
  private runningCalls = 0;
  /** Jobs whose outcome write is queued, in flight or waiting for a retry. */
  private unsettled = 0;
  private readonly acks: AckBatcher<Tracked>;
  /** Sizes the buffer when the prefetch is adaptive; null: `o.prefetch` as given. */
  private readonly auto: AdaptivePrefetch | null;
  private unrecorded: Tracked[] = [];
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private bufferTimer: ReturnType<typeof setTimeout> | null = null;
  private bufferTimerAt = 0;
  private renewTimer: ReturnType<typeof setTimeout> | null = null;
  private renewTimerAt = 0;
  private readonly renewals = new Set<Promise<void>>();
  private readonly changed = new ChangeLatch();
  private sharedAbort = new AbortController();
  private wakes: WakeReceiver | null = null;
  private waiter: ((woken: boolean) => void) | null = null;
  private wakePending = false;
  private kickScheduled = false;
  private backlog = false;
  /** The claim loop is waiting because it has no capacity (slots taken or too many outcomes unsettled). */
  private heldBack = false;
  private ranSinceDrained = false;
  private storeFailures = 0;
  private storeClosed = false;
  /** The drain gave up: late handler results and writes are dropped. */
  private stopped = false;
  private stopping = false;
  private active = false;
  /** Set while {@link run} runs: its stop signal (a hand-off arriving after it aborted is released). */
  private stopSignal: AbortSignal | null = null;
  /** Unregisters this worker as an idle hand-off taker; null while not registered. */
  private handoffOff: (() => void) | null = null;
  /** Hand-off slots reserved and not yet delivered or cancelled (each holds a handler slot). */
  private handoffReserved = 0;
  /** Releases of hand-offs that arrived after stop began (the drain waits for them). */
  private readonly handoffReleases = new Set<Promise<void>>();

  /**
   * Checks every option before anything else (no claim, no listen):
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming the option for a number out of
   *   range: `batchSize` (1..10 000), `concurrency` (>= 1), `prefetch` / `autoPrefetchMax` (>= 0), `maxClaim`
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
    this.o = options;
    this.obs = guardObserver(options.observer, options.logger, options.name);
    this.batchMode = options.batchHandler !== undefined;
    const autoMax = options.autoPrefetchMax ?? 0;
    this.auto = autoMax > 0 && !this.batchMode && options.prefetch === 0 ? new AdaptivePrefetch({ concurrency: options.concurrency, max: autoMax }) : null;
    this.acks = new AckBatcher<Tracked>({
      // One ackBatch takes at most MAX_BATCH ids: more completions than that (behind a slow write) go out in several.
      maxBatch: Math.min(MAX_BATCH, Math.max(1, options.maxClaim, options.concurrency + options.prefetch, this.auto ? options.concurrency + autoMax : 0)),
      write: (items) => (this.stopped ? Promise.resolve(0) : withTimeout(this.o.queue.ackBatch(items.map((t) => t.job)), this.o.storeTimeoutMs, 'ackBatch')),
      landed: (items, count) => this.acksLanded(items, count),
      failed: (items, err) => this.acksFailed(items, err),
    });
  }

  /** Jobs claimed and not yet handed to a handler, plus those whose handler runs. */
  get inFlight(): number {
    let n = this.buffer.length;
    for (const t of this.tracked) if (t.state === 'running') n += 1;
    return n;
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
    this.storeClosed = false;
    this.storeFailures = 0;
    this.backlog = false;
    this.wakePending = false;
    if (this.sharedAbort.signal.aborted) this.sharedAbort = new AbortController();
    this.stopSignal = signal;
    const background = new AbortController();
    const onAbort = (): void => this.waiter?.(false);
    try {
      if (signal.aborted) return;
      signal.addEventListener('abort', onAbort, { once: true });
      this.openWakes();
      const stats = this.statsLoop(background.signal);
      const started = { at: 0 };
      try {
        await this.claimLoop(signal);
      } finally {
        started.at = performance.now();
        this.leaveHandoff();
        this.stopping = true;
        await this.drain(started.at);
        background.abort();
        await stats;
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      background.abort();
      this.leaveHandoff();
      this.stopSignal = null;
      this.clearTimers();
      this.wakes?.close();
      this.wakes = null;
      this.waiter = null;
      this.active = false;
    }
  }

  private openWakes(): void {
    try {
      const wakes = this.o.queue.listen();
      this.wakes = wakes;
      void this.receiveWakes(wakes);
    } catch (err) {
      this.wakes = null;
      this.o.logger.warn(`${this.o.name}: cannot listen for commits on queue ${JSON.stringify(this.o.queue.name)} (${errorText(err)}); polling only`);
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
      this.o.logger.warn(`${this.o.name}: stopped listening for wakes of queue ${JSON.stringify(this.o.queue.name)} (${errorText(err)}); polling every ${this.o.idlePollIntervalMs} ms`);
    }
  }

  // ---- claiming ---------------------------------------------------------------------------------

  private async claimLoop(stop: AbortSignal): Promise<void> {
    while (!stop.aborted && !this.storeClosed) {
      const free = this.freeSlots();
      if (free <= 0) {
        // Freed slots and settled outcomes (a landed ack, retry or dead-letter write) cut this short.
        this.heldBack = true;
        const woken = await this.waitForWork(this.o.idlePollIntervalMs);
        this.heldBack = false;
        if (woken) this.backlog = true;
        continue;
      }
      const want = Math.min(this.o.maxClaim, free);
      // Claiming: hand-offs would race this claim for the same slots.
      this.leaveHandoff();
      // The lease of what comes back is timed from here, before the claim is sent (never later than the database's start).
      const claimStarted = performance.now();
      let jobs: Job[];
      try {
        jobs = await this.claim(want);
        this.storeFailures = 0;
      } catch (err) {
        if (stop.aborted) break;
        if (this.noteStoreError('claimBatch', err)) break;
        await sleep(this.backoffMs(), stop);
        continue;
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
        break;
      }
      if (this.auto) {
        // Starved: a slot sat idle with nothing buffered while this claim was on its way.
        const starved = this.runningCalls < this.o.concurrency && this.buffer.length === 0;
        this.auto.claimed(want, jobs.length, performance.now() - claimStarted, this.shortestLease(jobs), starved);
      }
      this.take(jobs, claimStarted);
      // A full claim: more is probably ready. Claim again at once, or wait for a freed slot.
      this.backlog = jobs.length === want;
      if (this.backlog && this.freeSlots() > 0) continue;
      const poll = jobs.length === 0 ? this.o.idlePollIntervalMs : this.o.pollIntervalMs;
      // A job that falls due by time sends no wake: wait no longer than until the next run_at the claim reported
      // (a database duration, timed from now, when the claim has returned: never early, late by at most a round trip).
      const nextDue = nextDueOf(jobs);
      const wait = nextDue === null || nextDue === undefined ? poll : Math.max(1, Math.min(poll, Math.ceil(nextDue) + 1));
      // Short claim, free slots: idle. Fresh enqueues of this store may come straight here.
      this.joinHandoff();
      if (await this.waitForWork(wait)) this.backlog = true;
    }
  }

  // ---- local hand-off -------------------------------------------------------------------------

  private joinHandoff(): void {
    if (this.handoffOff || !this.o.localHandoff || this.stopping) return;
    const point = handoffPoint(this.o.queue);
    if (point) this.handoffOff = point.register({ reserve: () => this.reserveHandoff() });
  }

  private leaveHandoff(): void {
    const off = this.handoffOff;
    this.handoffOff = null;
    off?.();
  }

  /** One handler slot for a job in flight from an enqueue of this store, or null when none is free now. */
  private reserveHandoff(): HandoffSlot | null {
    if (this.stopping || this.storeClosed || this.stopSignal === null || this.stopSignal.aborted || this.handoffOff === null) return null;
    // Jobs are probably ready already (a full claim, a wake while the slots were taken): they go first.
    if (this.backlog) return null;
    if (this.batchMode) {
      const size = this.o.batchSize ?? 1;
      if (this.unsettled > this.o.concurrency * size || this.runningCalls + this.handoffReserved >= this.o.concurrency) return null;
    } else {
      // A slot that starts the job at once: no buffering of handed-off jobs.
      if (this.unsettled > this.o.concurrency + this.prefetch) return null;
      if (this.runningCalls + this.buffer.length + this.handoffReserved >= this.o.concurrency) return null;
    }
    this.handoffReserved += 1;
    const claimStarted = performance.now();
    let done = false;
    const settle = (): boolean => {
      if (done) return false;
      done = true;
      this.handoffReserved -= 1;
      return true;
    };
    return {
      workerId: this.o.workerId,
      leaseMs: this.o.leaseMs ?? null,
      deliver: (job) => {
        if (!settle()) return;
        this.handedOff(job, claimStarted);
        this.changed.fire();
      },
      cancel: () => {
        if (!settle()) return;
        this.changed.fire();
        // The job went pending and woke us: a wake taken while this slot was held found no free slot.
        this.slotFreed();
      },
    };
  }

  /** A job an enqueue of this store inserted claimed by this worker: as if a claim had returned it. */
  private handedOff(job: Job, claimStarted: number): void {
    this.obs?.claimed?.(1);
    if (this.stopping || this.stopped || !this.active || this.stopSignal?.aborted !== false) {
      // Stop began while it was in flight: never started, so give it back with its attempt.
      const p = this.releaseJobs([job], 'the worker is stopping').finally(() => this.handoffReleases.delete(p));
      this.handoffReleases.add(p);
      return;
    }
    this.ranSinceDrained = true;
    this.take([job], claimStarted);
  }

  /**
   * How many jobs the next claim may take: the free capacity (`concurrency + prefetch` minus
   * running and buffered jobs; in batch mode one batch per free call slot), 0 while the buffer
   * is above half the prefetch or while more than that capacity of outcomes is unrecorded.
   */
  private freeSlots(): number {
    if (this.batchMode) {
      const size = this.o.batchSize ?? 1;
      if (this.unsettled > this.o.concurrency * size) return 0;
      return this.runningCalls + this.handoffReserved < this.o.concurrency ? size : 0;
    }
    const prefetch = this.prefetch;
    const capacity = this.o.concurrency + prefetch;
    if (this.unsettled > capacity) return 0;
    if (this.buffer.length > Math.floor(prefetch / 2)) return 0;
    return Math.max(0, capacity - this.runningCalls - this.buffer.length - this.handoffReserved);
  }

  /** The shortest lease among freshly claimed jobs (ms), as {@link track} computes it; null for none. */
  private shortestLease(jobs: readonly Job[]): number | null {
    if (this.o.leaseMs !== undefined) return this.o.leaseMs;
    let least: number | null = null;
    for (const job of jobs) {
      const ms = this.grantedLease(job);
      if (least === null || ms < least) least = ms;
    }
    return least;
  }

  /**
   * The lease the claim of `job` granted (`job.leaseMs`; a `Job` of another implementation without it:
   * the queue's visibility timeout). A duration, timed on this worker's monotonic clock: the claim's
   * `deadline` is a database instant and is never compared with this process's clock (SPEC §11).
   */
  private grantedLease(job: Job): number {
    const ms = (job as { leaseMs?: unknown }).leaseMs;
    if (typeof ms === 'number' && Number.isFinite(ms) && ms > 0) return ms;
    return Math.max(1, this.o.queue.opts?.visibilityTimeoutMs ?? 1);
  }

  private async claim(max: number): Promise<Job[]> {
    const opts = this.o.leaseMs === undefined ? undefined : { visibilityTimeoutMs: this.o.leaseMs };
    const pending = this.o.queue.claimBatch(max, this.o.workerId, opts);
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
    const leaseMs = this.o.leaseMs ?? this.grantedLease(job);
    const t: Tracked = { job, state: 'buffered', abort: null, outcome: null, failingSince: null, leaseLost: false, renewing: false, leaseMs, dueAt: claimStarted + leaseMs / 2 };
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
    this.startBuffered();
  }

  /** Moves buffered jobs into free slots; one past its release point is given back instead of started late. */
  private startBuffered(): void {
    if (this.stopping) return;
    let late: Tracked[] | null = null;
    const now = performance.now();
    while (this.runningCalls < this.o.concurrency && this.buffer.length > 0) {
      const next = this.buffer.shift()!;
      if (now >= next.dueAt) (late ??= []).push(next);
      else this.execute([next]);
    }
    if (late) {
      this.auto?.overran();
      void this.releaseBuffered(late, 'they waited half their lease for a free slot');
    }
    this.scheduleBufferExpiry();
  }

  /** Keeps one timer at the earliest release point of the buffer. */
  private scheduleBufferExpiry(): void {
    if (this.buffer.length === 0 || this.stopping) {
      if (this.bufferTimer) clearTimeout(this.bufferTimer);
      this.bufferTimer = null;
      return;
    }
    let first = Infinity;
    for (const b of this.buffer) first = Math.min(first, b.dueAt);
    // A timer due no later than the first release point stays (it re-plans when it fires).
    if (this.bufferTimer && this.bufferTimerAt <= first) return;
    if (this.bufferTimer) clearTimeout(this.bufferTimer);
    this.bufferTimerAt = first;
    this.bufferTimer = setTimeout(() => {
      this.bufferTimer = null;
      const now = performance.now();
      const late = this.buffer.filter((b) => now >= b.dueAt);
      if (late.length > 0) {
        this.auto?.overran();
        this.buffer = this.buffer.filter((b) => now < b.dueAt);
        void this.releaseBuffered(late, 'they waited half their lease for a free slot');
        this.slotFreed();
      }
      this.scheduleBufferExpiry();
    }, Math.max(0, first - performance.now()));
  }

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
    const results = await Promise.allSettled(jobs.map((job) => withTimeout(job.release(), this.o.storeTimeoutMs, 'release')));
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed.length > 0) {
      this.o.logger.warn(`${this.o.name}: could not release ${failed.length} job(s)${why ? ` (${why})` : ''}: ${errorText(failed[0]!.reason)}; they return after their claims lapse`);
    }
  }

  // ---- running handlers ------------------------------------------------------------------------

  private execute(items: Tracked[]): void {
    this.runningCalls += 1;
    for (const t of items) t.state = 'running';
    if (this.o.renewLeases) this.scheduleRenewal(items[0]!.dueAt);
    void this.call(items)
      .catch((err: unknown) => {
        this.o.logger.error(`${this.o.name}: bookkeeping of job ${items[0]!.job.id} failed`, err);
        for (const t of items) if (t.state === 'running') this.untrack(t);
      })
      .finally(() => {
        this.runningCalls -= 1;
        this.changed.fire();
        this.startBuffered();
        this.slotFreed();
      });
  }

  private signalFor(items: Tracked[]): AbortSignal {
    if (!this.o.jobSignals) return this.sharedAbort.signal;
    const ac = new AbortController();
    for (const t of items) t.abort = ac;
    return ac.signal;
  }

  private async call(items: Tracked[]): Promise<void> {
    const o = this.o;
    const timed = this.obs !== null || o.handlerTimeoutMs !== undefined || this.auto !== null;
    const started = timed ? performance.now() : 0;
    const signal = this.signalFor(items);
    const jobs = this.batchMode || o.wrap ? items.map((t) => t.job) : null;
    const single = items[0]!.job;
    let result: HandlerResult = 'ok';
    let error: unknown = null;
    let outcomes: BatchOutcomes = undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      // async: a synchronous throw of the handler becomes a rejection.
      const invoke = async (): Promise<unknown> => (this.batchMode ? o.batchHandler!(jobs!, signal) : o.handler!(single, signal));
      const attempt = o.wrap ? o.wrap(jobs!, invoke) : invoke();
      if (o.handlerTimeoutMs === undefined) {
        outcomes = (await attempt) as BatchOutcomes;
      } else {
        const ms = o.handlerTimeoutMs;
        const timedOut = new Promise<typeof TIMEOUT>((resolve) => {
          timer = setTimeout(() => resolve(TIMEOUT), ms);
        });
        const r = await Promise.race([attempt, timedOut]);
        if (r === TIMEOUT) {
          result = 'timeout';
          error = o.timeoutError ? o.timeoutError(ms) : new Error(`handler timed out after ${ms} ms`);
          items[0]!.abort?.abort(error);
        } else {
          outcomes = r as BatchOutcomes;
        }
      }
    } catch (err) {
      error = err;
      result = isPermanent(err) ? 'permanent' : 'error';
    } finally {
      clearTimeout(timer);
    }
    const durationMs = timed ? performance.now() - started : 0;
    this.auto?.handled(durationMs);
    for (let i = 0; i < items.length; i++) {
      const t = items[i]!;
      let r = result;
      let e = error;
      if (r === 'ok' && this.batchMode && Array.isArray(outcomes) && outcomes[i] instanceof Error) {
        e = outcomes[i];
        r = isPermanent(e) ? 'permanent' : 'error';
      }
      this.settle(t, r, e, durationMs);
    }
  }

  /** One job's handler result: queue its ack or write its failure, unless the worker let go of it meanwhile. */
  private settle(t: Tracked, result: HandlerResult, error: unknown, durationMs: number): void {
    // The drain gave up on it (left to its lease or released): its late result is dropped.
    if (t.state === 'finished') return;
    const obs = this.obs;
    if (result === 'ok') obs?.completed?.(t.job, durationMs);
    else {
      obs?.failed?.(t.job, error, durationMs, result);
      // A PermanentError is a decision, not a crash: its one line is the dead-letter WARN in record().
      if (this.o.logHandlerErrors && result !== 'permanent') {
        const job = t.job;
        this.o.logger.error(`${this.o.name} failed on job ${job.id} (attempt ${job.attempts}/${job.maxAttempts})`, error);
      }
    }
    if (this.stopped || t.leaseLost) {
      // Someone else owns the job now (or shutdown let go of it); its outcome is theirs to write.
      this.untrack(t);
      return;
    }
    this.unsettled += 1;
    if (result === 'ok') {
      t.outcome = ACK_LIKE;
      t.state = 'recording';
      this.acks.add(t);
    } else {
      const failure: FailureKind = result === 'permanent' ? 'permanent' : result === 'timeout' ? 'timeout' : 'transient';
      void this.record(t, this.decideSafely(t.job, failure, error));
    }
  }

  /**
   * `decide`, guarded: a throw (or an answer that is not a `retry`/`dead` outcome) is logged once at error
   * level naming the job, and the job gets the default outcome: dead for a `PermanentError`, otherwise a
   * retry with the queue's own backoff (`delayMs` undefined; the store dead-letters it once its attempts
   * are exhausted). The worker keeps running.
   */
  private decideSafely(job: Job, failure: FailureKind, error: unknown): FailureOutcome {
    let problem: unknown;
    try {
      const outcome = this.o.decide(job, failure, error);
      const kind = (outcome as { kind?: unknown } | null | undefined)?.kind;
      if (kind === 'dead') return outcome;
      if (kind === 'retry') {
        // A delay the store would refuse (NaN, negative, past the largest Date) is decide's mistake, not a store
        // error: refused here, before any write, so the job is not stuck in processing until its lease lapses.
        const delayMs = (outcome as { delayMs?: unknown }).delayMs;
        if (delayMs !== undefined) requireDurationMs('delayMs returned by decide', delayMs, { allowZero: true });
        return outcome;
      }
      problem = new TypeError(`decide returned ${outcome === null ? 'null' : typeof outcome === 'object' ? 'an object without kind "retry" or "dead"' : typeof outcome}`);
    } catch (err) {
      problem = err;
    }
    const fallback: FailureOutcome =
      failure === 'permanent'
        ? { kind: 'dead', reason: 'permanent', error }
        : { kind: 'retry', reason: failure === 'timeout' ? 'timeout' : 'error', delayMs: undefined, error };
    const then = fallback.kind === 'dead' ? 'dead-lettering it (PermanentError)' : "retrying it with the queue's backoff";
    this.o.logger.error(`${this.o.name}: decide failed for job ${job.id} of queue ${JSON.stringify(this.o.queue.name)} (attempt ${job.attempts}/${job.maxAttempts}); ${then}`, problem);
    return fallback;
  }

  // ---- outcomes ---------------------------------------------------------------------------------

  private acksLanded(items: readonly Tracked[], count: number): void {
    this.storeFailures = 0;
    // Fenced acks (the claim lapsed, the job may run again) changed nothing; ackBatch says how many, not which.
    const lost = Math.max(0, items.length - count);
    if (lost > 0 && !this.stopped) {
      // The documented at-least-once window, counted by `leaseLost`: not a warning.
      this.o.logger.log(`${this.o.name}: ${lost} of ${items.length} ack(s) came after the claim lapsed; those jobs may run again`);
      for (let i = 0; i < lost; i++) this.obs?.leaseLost?.(null);
    }
    for (const t of items) this.settled(t);
    // Held-back claims may resume.
    if (this.backlog) this.kick();
  }

  /** A failed ack write is kept for a retry, within one lease from its first failure. */
  private acksFailed(items: readonly Tracked[], err: unknown): void {
    if (this.stopped) {
      for (const t of items) this.settled(t);
      return;
    }
    if (this.noteStoreError(`recording the ack of ${items.length} job(s)`, err)) {
      for (const t of items) this.giveUp(t, 'outcome-write');
      return;
    }
    for (const t of items) this.keepForRetry(t);
  }

  /** Writes a retry or dead-letter outcome, fenced by the claim token. */
  private async record(t: Tracked, outcome: FailureOutcome): Promise<void> {
    t.outcome = outcome;
    t.state = 'recording';
    let landed: boolean;
    try {
      const write = outcome.kind === 'retry' ? t.job.retry(outcome.error, outcome.delayMs) : t.job.fail(outcome.error);
      landed = await withTimeout(write, this.o.storeTimeoutMs, outcome.kind === 'dead' ? 'fail' : 'retry');
      this.storeFailures = 0;
    } catch (err) {
      if (this.stopped) return this.settled(t);
      if (this.noteStoreError(`writing the outcome of job ${t.job.id}`, err)) return this.giveUp(t, 'outcome-write');
      return this.keepForRetry(t);
    }
    if ((t.state as State) === 'finished') return;
    if (!landed) {
      // Fenced: the lease lapsed and the job was (or may be) reclaimed. Zero rows changed.
      this.loseLease(t);
      return;
    }
    const dead = outcome.kind === 'dead' ? outcome.reason : outcome.delayMs === undefined && t.job.attempts >= t.job.maxAttempts ? 'exhausted' : null;
    if (dead !== null) {
      this.o.logger.warn(deadLetterLine(`${this.o.name}: job ${t.job.id} of queue ${JSON.stringify(this.o.queue.name)}`, t.job, dead, outcome.error));
      this.obs?.dead?.(t.job, dead, outcome.error);
    } else if (outcome.kind === 'retry') this.obs?.retried?.(t.job, outcome.reason, outcome.error);
    this.settled(t);
  }

  private keepForRetry(t: Tracked): void {
    const now = performance.now();
    t.failingSince ??= now;
    if (now - t.failingSince >= t.leaseMs) {
      this.o.logger.warn(`${this.o.name}: giving up on the outcome of job ${t.job.id} after ${Math.round(t.leaseMs)} ms; it runs again after its claim lapses`);
      this.giveUp(t, 'outcome-write');
      return;
    }
    t.state = 'unrecorded';
    this.unrecorded.push(t);
    this.scheduleOutcomeRetry();
  }

  private scheduleOutcomeRetry(): void {
    if (this.retryTimer || this.unrecorded.length === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.rewriteUnrecorded();
    }, this.backoffMs());
  }

  private rewriteUnrecorded(): void {
    const due = this.unrecorded;
    this.unrecorded = [];
    for (const t of due) {
      if (t.state !== 'unrecorded') continue;
      if (t.outcome === null) {
        t.state = 'recording';
        this.acks.add(t);
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
      if (this.heldBack) this.scheduleKick();
    }
    this.untrack(t);
  }

  private giveUp(t: Tracked, reason: AbandonReason): void {
    this.obs?.abandoned?.(t.job, reason);
    this.settled(t);
  }

  private untrack(t: Tracked): void {
    t.state = 'finished';
    if (this.tracked.delete(t)) this.changed.fire();
  }

  // ---- lease renewal -----------------------------------------------------------------------------

  /** Keeps one timer at the earliest renewal point of the claims in flight. */
  private scheduleRenewal(at: number): void {
    if (this.stopped) return;
    if (this.renewTimer && this.renewTimerAt <= at) return;
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimerAt = at;
    this.renewTimer = setTimeout(() => this.renewDue(), Math.max(0, at - performance.now()));
  }

  private renewDue(): void {
    this.renewTimer = null;
    const now = performance.now();
    let next = Infinity;
    for (const t of this.tracked) {
      if (t.state === 'buffered' || t.state === 'finished' || t.leaseLost) continue;
      if (now >= t.dueAt) {
        // A fixed schedule: one slow round does not delay the next.
        t.dueAt += Math.max(1, t.leaseMs / 2);
        if (t.dueAt <= now) t.dueAt = now + Math.max(1, t.leaseMs / 2);
        if (!t.renewing) {
          const p = this.renew(t).finally(() => this.renewals.delete(p));
          this.renewals.add(p);
        }
      }
      next = Math.min(next, t.dueAt);
    }
    if (next < Infinity) this.scheduleRenewal(next);
  }

  private async renew(t: Tracked): Promise<void> {
    t.renewing = true;
    try {
      const ok = await withTimeout(t.job.heartbeat(t.leaseMs), this.o.storeTimeoutMs, 'heartbeat');
      // A write in flight decides for itself.
      if (ok || t.state === 'finished' || t.state === 'recording') return;
      this.loseLease(t);
    } catch (err) {
      // Not a verdict: the next round may still land before the deadline.
      if (!this.stopped) this.noteStoreError(`renewing the lease of job ${t.job.id}`, err);
    } finally {
      t.renewing = false;
    }
  }

  private loseLease(t: Tracked): void {
    if (t.leaseLost || t.state === 'finished') return;
    t.leaseLost = true;
    this.o.logger.warn(`${this.o.name}: lost the claim of job ${t.job.id}; another worker may run it again`);
    this.obs?.leaseLost?.(t.job);
    if (t.state === 'running') {
      // The slot stays taken until the handler settles (settle() untracks it).
      t.abort?.abort(new Error('lease lost'));
    } else {
      this.settled(t);
    }
  }

  // ---- stats ----------------------------------------------------------------------------------------

  private async statsLoop(stop: AbortSignal): Promise<void> {
    const obs = this.obs;
    if (!obs?.stats) return;
    while (!stop.aborted) {
      try {
        // Shutdown does not wait for a sample in flight (up to storeTimeoutMs): it is dropped.
        const sample = await untilAborted(withTimeout(this.o.queue.stats(), this.o.storeTimeoutMs, 'stats'), stop);
        if (sample === ABORTED) return;
        obs.stats(sample);
      } catch (err) {
        if (!isClosed(err) && !stop.aborted) this.o.logger.warn(`${this.o.name}: sampling queue stats failed (${errorText(err)})`);
      }
      await sleep(this.o.statsIntervalMs, stop);
    }
  }

  // ---- shutdown -----------------------------------------------------------------------------------

  /** Claiming has stopped: release the buffer, wait for handlers up to the drain timeout, then for outcome writes. */
  private async drain(startedAt: number): Promise<void> {
    const buffered = this.buffer.splice(0);
    const releasing = this.releaseBuffered(buffered, 'the worker is stopping');
    this.scheduleBufferExpiry();
    const deadline = startedAt + this.o.drainTimeoutMs;
    // Hand-offs in flight land (a job arriving now is released) or fall back; handlers run as usual.
    while (this.runningCalls > 0 || this.handoffReserved > 0) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      await this.changed.wait(left);
    }
    await releasing;
    await Promise.all(this.handoffReleases);
    if (this.runningCalls > 0) {
      const left = [...this.tracked].filter((t) => t.state === 'running');
      const reason = new Error(this.o.stopMessage);
      for (const t of left) {
        this.obs?.abandoned?.(t.job, 'drain');
        this.untrack(t);
        t.abort?.abort(reason);
      }
      if (!this.o.jobSignals) this.sharedAbort.abort(reason);
      if (this.o.releaseOnDrainTimeout && left.length > 0) {
        this.o.logger.warn(`${this.o.name}: ${left.length} job(s) still running after the ${this.o.drainTimeoutMs} ms drain; releasing them`);
        await this.releaseJobs(
          left.map((t) => t.job),
          'drain timeout',
        );
      }
    }
    // Outcome writes: retry failed ones at once, within what is left (and at least minOutcomeDrainMs).
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    const writeDeadline = Math.max(deadline, performance.now() + this.o.minOutcomeDrainMs);
    while (this.unsettled > 0 && !this.storeClosed) {
      const left = writeDeadline - performance.now();
      if (left <= 0) break;
      this.rewriteUnrecorded();
      this.acks.flush();
      await this.changed.wait(this.unrecorded.length > 0 ? Math.min(left, this.backoffMs()) : left);
    }
    this.stopped = true;
    this.clearTimers();
    const leftover = [...this.tracked];
    if (leftover.length > 0) {
      const unwritten = leftover.filter((t) => t.state !== 'running').length;
      if (unwritten > 0) this.o.logger.warn(`${this.o.name}: ${unwritten} outcome(s) not recorded by shutdown; those jobs run again after their claims lapse`);
      const reason = new Error(this.o.stopMessage);
      for (const t of leftover) {
        t.abort?.abort(reason);
        this.giveUp(t, 'drain');
      }
    }
    await Promise.all(this.renewals);
  }

  private clearTimers(): void {
    for (const timer of [this.retryTimer, this.bufferTimer, this.renewTimer]) if (timer) clearTimeout(timer);
    this.retryTimer = this.bufferTimer = this.renewTimer = null;
  }

  // ---- waiting ----------------------------------------------------------------------------------------

  /** Resolves true when the queue's wake ended the wait (a commit on the queue), false on a kick, the poll or stop. */
  private waitForWork(ms: number): Promise<boolean> {
    if (this.wakePending) {
      this.wakePending = false;
      return Promise.resolve(true);
    }
    if (this.stopping) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), ms);
      const done = (woken: boolean): void => {
        clearTimeout(timer);
        if (this.waiter === done) this.waiter = null;
        resolve(woken);
      };
      this.waiter = done;
    });
  }

  private kick(): void {
    this.waiter?.(false);
  }

  /** Wakes the loop to claim for freed slots, once per event-loop turn, when more work is probably ready. */
  private slotFreed(): void {
    if (this.backlog) this.scheduleKick();
  }

  /** Kicks the waiting claim loop once per event-loop turn, however many events asked for it. */
  private scheduleKick(): void {
    if (this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      this.kick();
    });
  }

  private backoffMs(): number {
    const n = Math.max(1, this.storeFailures);
    return Math.min(this.o.firstBackoffMs * 2 ** Math.min(n - 1, 30), Math.max(this.o.firstBackoffMs, this.o.maxBackoffMs));
  }

  /** Logs a store error and counts it for the backoff; true when the store is closed (the loop ends). */
  private noteStoreError(operation: string, err: unknown): boolean {
    if (isClosed(err)) {
      if (!this.storeClosed) this.o.logger.warn(`${this.o.name}: the store is closed; the worker stops`);
      this.storeClosed = true;
      this.kick();
      return true;
    }
    this.storeFailures += 1;
    this.o.logger.warn(`${this.o.name}: ${operation} failed; retrying in ${this.backoffMs()} ms (${errorText(err)})`);
    return false;
  }
}

const TIMEOUT = Symbol('timeout');
const ABORTED = Symbol('aborted');

/** `promise`, or {@link ABORTED} as soon as `signal` aborts (the promise is left to settle on its own, its rejection handled). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.resolve(ABORTED);
  }
  return new Promise<T | typeof ABORTED>((resolve, reject) => {
    const onAbort = (): void => resolve(ABORTED);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Also recognises a PermanentError from another copy of the package. */
export function isPermanent(err: unknown): boolean {
  return err instanceof PermanentError || (err instanceof Error && (err as { code?: unknown }).code === 'PERMANENT');
}

function isClosed(err: unknown): boolean {
  return err instanceof AlkstoreError && err.code === 'CLOSED';
}
