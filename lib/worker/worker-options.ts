import { InvalidArgument, InvalidOption } from '../contract/errors.js';
import type { Job, Queue, StoreLogger } from '../contract/types.js';
import {
  asOption,
  requireBatchSize,
  requireBoolean,
  requireCount,
  requireDurationMs,
  requireInt,
  requireTimerMs,
} from '../contract/validate.js';
import type { DeadReason, RetryReason, WorkerObserver } from './worker-observer.js';

// Options of the worker core: their types, their checks before any I/O, and the guarded retry policy.
/** How a handler call failed. */
export type FailureKind = 'transient' | 'timeout' | 'permanent';

/**
 * What to write for a failed job: `retry` (with `delayMs`, or the store's
 * stamped backoff when undefined; the store dead-letters a job whose attempts
 * are exhausted), `dead` at once with `error` as its last error, or `release`:
 * pending again at once with the attempt its claim consumed given back (the
 * failure was not the job's: the outbox dispatcher's broker was unreachable).
 */
export type FailureOutcome =
  | {
      readonly kind: 'retry';
      readonly reason: RetryReason;
      readonly delayMs: number | undefined;
      readonly error: unknown;
    }
  | { readonly kind: 'dead'; readonly reason: DeadReason; readonly error: unknown }
  | { readonly kind: 'release'; readonly error: unknown };

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
  /**
   * Writes coalesced acks instead of `queue.ackBatch`, with each job's handler return value beside it
   * (the outbox dispatcher stores the brokers' receipts in the same write); resolves to how many landed.
   */
  readonly ackBatch?: (jobs: readonly Job[], results: readonly unknown[]) => Promise<number>;
  /**
   * Coalesced ack writes in flight at once (default 1: what completes during a write forms the next batch).
   * Two let a store whose round trip, not its work, bounds the acks overlap them (the outbox dispatcher).
   */
  readonly ackWrites?: number;
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
  /**
   * One AbortController per job (aborted on timeout, lost lease, cancel, drain) instead of one shared by all.
   * A handler that cannot read a second argument (fewer than two parameters, no rest or default
   * parameter, no `arguments`) shares one all the same: which signal it is given cannot be observed.
   */
  readonly jobSignals: boolean;
  /**
   * With `jobSignals`: the jobs whose handlers start in the same event-loop turn, at most 1 % of `handlerTimeoutMs` apart, share one AbortController
   * instead of one each, so aborting one job's signal (its timeout, its lost lease) aborts every job of its
   * turn still running. Their timeout timers start within that window, so they fall due together: a job
   * aborted by another's timeout (having run at least 99 % of its own) is reported as timed out itself; one aborted by another's lost lease
   * fails with a `LeaseLostAbort`. For a publisher-backed outbox dispatcher (one controller per burst of
   * publishes, not per message). Default false.
   */
  readonly turnSignals?: boolean;
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
  /**
   * Ack each job with its (single) handler's return value as its result (`job.ack(result)`, outside
   * the coalesced `ackBatch`), so `getJob` and waiters read it. Default false.
   */
  readonly keepResults?: boolean;
  /**
   * Abort the signal of a running job cancelled from any process (`queue.cancel`), woken by the
   * queue's cancel wakes and checking every `cancelPollMs` while handlers run. Needs `jobSignals`
   * for a per-job signal. Default false.
   */
  readonly watchCancels?: boolean;
  /** The cancel check's poll bound (ms), default 1000. */
  readonly cancelPollMs?: number;
}

const QUEUE_METHODS = ['claimBatch', 'ackBatch', 'listen', 'stats'] as const;
const LOGGER_METHODS = ['log', 'warn', 'error'] as const;
const OBSERVER_HOOKS = [
  'claimed',
  'completed',
  'failed',
  'retried',
  'dead',
  'leaseLost',
  'cancelled',
  'abandoned',
  'drained',
  'stats',
] as const;

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
export function validateWorkerCoreOptions(o: WorkerCoreOptions): void {
  if (!isObject(o)) throw new InvalidOption('WorkerCore options', 'must be an object');
  const q = o.queue as unknown;
  if (!isObject(q) || typeof q.name !== 'string' || QUEUE_METHODS.some((m) => typeof q[m] !== 'function')) {
    throw new InvalidOption('queue', `must be a Queue (a name and ${QUEUE_METHODS.join(', ')})`);
  }
  if (typeof o.name !== 'string' || o.name.trim().length === 0)
    throw new InvalidOption('name', 'must be a non-empty string');
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
  if (o.ackWrites !== undefined) requireInt('ackWrites', o.ackWrites, 1, 16);
  requireInt('prefetch', o.prefetch, 0, Number.MAX_SAFE_INTEGER);
  if (batch && o.prefetch > 0)
    throw new InvalidOption('prefetch', 'must be 0 with batchHandler (a batch is claimed per free call slot)');
  if (o.autoPrefetchMax !== undefined) requireInt('autoPrefetchMax', o.autoPrefetchMax, 0, Number.MAX_SAFE_INTEGER);
  requireBatchSize('maxClaim', o.maxClaim);
  if (o.leaseMs !== undefined) requireTimerMs('leaseMs', o.leaseMs);
  if (o.handlerTimeoutMs !== undefined) requireTimerMs('handlerTimeoutMs', o.handlerTimeoutMs);
  requireTimerMs('storeTimeoutMs', o.storeTimeoutMs);
  requireTimerMs('pollIntervalMs', o.pollIntervalMs);
  requireTimerMs('idlePollIntervalMs', o.idlePollIntervalMs);
  requireTimerMs('firstBackoffMs', o.firstBackoffMs);
  requireTimerMs('maxBackoffMs', o.maxBackoffMs);
  if (o.maxBackoffMs < o.firstBackoffMs)
    throw new InvalidArgument(
      'maxBackoffMs',
      `must be at least firstBackoffMs (${o.firstBackoffMs}), got ${o.maxBackoffMs}`,
    );
  requireTimerMs('drainTimeoutMs', o.drainTimeoutMs, 0);
  requireTimerMs('minOutcomeDrainMs', o.minOutcomeDrainMs, 0);
  requireTimerMs('statsIntervalMs', o.statsIntervalMs);
  if (o.cancelPollMs !== undefined) requireTimerMs('cancelPollMs', o.cancelPollMs);
  asOption(() => {
    for (const f of ['renewLeases', 'jobSignals', 'releaseOnDrainTimeout', 'logHandlerErrors'] as const)
      requireBoolean(f, o[f]);
    if (o.localHandoff !== undefined) requireBoolean('localHandoff', o.localHandoff);
    if (o.keepResults !== undefined) requireBoolean('keepResults', o.keepResults);
    if (o.watchCancels !== undefined) requireBoolean('watchCancels', o.watchCancels);
    if (o.turnSignals !== undefined) requireBoolean('turnSignals', o.turnSignals);
  });
  optionalFunction('timeoutError', o.timeoutError);
  if (typeof o.stopMessage !== 'string') throw new InvalidOption('stopMessage', 'must be a string');
  if (typeof o.decide !== 'function')
    throw new InvalidOption('decide', 'must be a function (job, failure, error) => FailureOutcome');
  if (typeof o.workerId !== 'string' || o.workerId.trim().length === 0)
    throw new InvalidOption('workerId', 'must be a non-empty string (not blank)');
  const log = o.logger as unknown;
  if (!isObject(log) || LOGGER_METHODS.some((m) => typeof log[m] !== 'function'))
    throw new InvalidOption('logger', `must be a StoreLogger (${LOGGER_METHODS.join(', ')})`);
  const obs = o.observer as unknown;
  if (obs !== null) {
    if (!isObject(obs)) throw new InvalidOption('observer', 'must be a WorkerObserver object or null');
    for (const h of OBSERVER_HOOKS) optionalFunction(`observer.${h}`, obs[h]);
  }
  optionalFunction('ackBatch', o.ackBatch);
  if (o.wrap !== undefined && o.wrap !== null && typeof o.wrap !== 'function')
    throw new InvalidOption('wrap', 'must be a function, null or undefined');
}

/**
 * `o.decide`, guarded: a throw (or an answer that is not a `retry`/`dead` outcome) is logged once at error
 * level naming the job, and the job gets the default outcome: dead for a `PermanentError`, otherwise a
 * retry with the queue's own backoff (`delayMs` undefined; the store dead-letters it once its attempts
 * are exhausted). The worker keeps running.
 */
export function decideSafely(o: WorkerCoreOptions, job: Job, failure: FailureKind, error: unknown): FailureOutcome {
  let problem: unknown;
  try {
    const outcome = o.decide(job, failure, error);
    const kind = (outcome as { kind?: unknown } | null | undefined)?.kind;
    if (kind === 'dead' || kind === 'release') return outcome;
    if (kind === 'retry') {
      // A delay the store would refuse (NaN, negative, past the largest Date) is decide's mistake, not a store
      // error: refused here, before any write, so the job is not stuck in processing until its lease lapses.
      const delayMs = (outcome as { delayMs?: unknown }).delayMs;
      if (delayMs !== undefined) requireDurationMs('delayMs returned by decide', delayMs, { allowZero: true });
      return outcome;
    }
    problem = new TypeError(
      `decide returned ${outcome === null ? 'null' : typeof outcome === 'object' ? 'an object without kind "retry" or "dead"' : typeof outcome}`,
    );
  } catch (err) {
    problem = err;
  }
  const fallback = defaultOutcome(failure, error);
  const then = fallback.kind === 'dead' ? 'dead-lettering it (PermanentError)' : "retrying it with the queue's backoff";
  o.logger.error(
    `${o.name}: decide failed for job ${job.id} of queue ${JSON.stringify(o.queue.name)} (attempt ${job.attempts}/${job.maxAttempts}); ${then}`,
    problem,
  );
  return fallback;
}

/** The outcome a failed handler call gets without a custom policy: dead for a `PermanentError`, else a retry with the queue's backoff. */
export function defaultOutcome(failure: FailureKind, error: unknown): FailureOutcome {
  return failure === 'permanent'
    ? { kind: 'dead', reason: 'permanent', error }
    : { kind: 'retry', reason: failure === 'timeout' ? 'timeout' : 'error', delayMs: undefined, error };
}

// Below the worker layer, where the outbox's runOnce uses it too.
export { isPermanent } from '../internal/permanent.js';
