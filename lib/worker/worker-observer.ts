import type { Job, QueueStats, StoreLogger } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';

/** How one handler call ended, as seen by the worker. */
export type HandlerResult = 'ok' | 'error' | 'timeout' | 'permanent';

/** Why a failed job was put back: the handler threw, or it outran its timeout. */
export type RetryReason = 'error' | 'timeout';

/** Why a job was dead-lettered: the handler said retrying cannot help (`PermanentError`), or the attempts ran out. */
export type DeadReason = 'permanent' | 'exhausted';

/**
 * Why a worker let go of a claimed job without recording its outcome; the job
 * then runs again after its claim lapses (the at-least-once window):
 * - `outcome-write`: the outcome write kept failing for a whole lease;
 * - `drain`: the handler (or its outcome write) was still unfinished when shutdown stopped waiting.
 */
export type AbandonReason = 'outcome-write' | 'drain';

/**
 * The one seam every worker loop (queue worker, outbox dispatcher) reports
 * through: metrics adapters, lifecycle event emitters and tests implement
 * the hooks they need. Hooks run synchronously on the worker's path, so they
 * must be cheap; a throw is caught and logged, never propagated.
 */
export interface WorkerObserver {
  /** One claim statement returned `count` jobs (> 0). */
  claimed?(count: number): void;
  /** The handler resolved for `job` after `durationMs` (its ack is written next, batched). */
  completed?(job: Job, durationMs: number): void;
  /** The handler threw or timed out; a `retried` or `dead` follows once the outcome is written. */
  failed?(job: Job, error: unknown, durationMs: number, result: Exclude<HandlerResult, 'ok'>): void;
  /** A failed job is back to pending with a delay (counted once the store accepted it). */
  retried?(job: Job, reason: RetryReason, error: unknown): void;
  /** A job moved to dead (counted once the store accepted it). */
  dead?(job: Job, reason: DeadReason, error: unknown): void;
  /**
   * The worker no longer owns a claim it held: a renewal or an outcome write was
   * fenced (the claim lapsed, the job may run again elsewhere). `job` is null for
   * fenced acks of a batch, where the store reports only how many.
   */
  leaseLost?(job: Job | null): void;
  /** A job was cancelled (from any process) while its handler ran: its signal aborted, no outcome written by this worker. */
  cancelled?(job: Job): void;
  /** The worker let go of a job without recording its outcome. */
  abandoned?(job: Job, reason: AbandonReason): void;
  /** A claim found the queue empty after the worker had run jobs since the last `drained`. */
  drained?(): void;
  /** A sample of `queue.stats()`, taken every stats interval while at least one observer has this hook. */
  stats?(stats: QueueStats): void;
}

type HookName = keyof WorkerObserver;
const HOOKS: readonly HookName[] = [
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
];

/**
 * One observer that forwards every hook to each of `observers` (skipping
 * `null`s), catching and logging a throwing hook. Resolves `null` when there is
 * nothing to observe, so a worker without observers does no work for them.
 */
export function combineObservers(
  observers: readonly (WorkerObserver | null | undefined)[],
  logger: StoreLogger,
  name: string,
): WorkerObserver | null {
  const list = observers.filter((o): o is WorkerObserver => o != null);
  if (list.length === 0) return null;
  const combined: Record<string, (...args: never[]) => void> = {};
  for (const hook of HOOKS) {
    const targets = list.filter((o) => typeof o[hook] === 'function');
    if (targets.length === 0) continue;
    combined[hook] = (...args: never[]) => {
      for (const o of targets) {
        try {
          (o[hook] as (...a: never[]) => void).apply(o, args);
        } catch (err) {
          logger.warn(`${name}: the ${hook} hook of an observer threw (${errorText(err)})`);
        }
      }
    };
  }
  return combined as WorkerObserver;
}

/**
 * `observer` with every hook guarded, as the worker core calls it: a hook that throws (or returns a
 * promise that rejects) is logged at error level the first time, naming the hook, and ignored
 * afterwards; the worker's own bookkeeping (the job's outcome) goes on as if it had returned.
 * Null stays null.
 */
export function guardObserver(
  observer: WorkerObserver | null,
  logger: StoreLogger,
  name: string,
): WorkerObserver | null {
  if (observer === null) return null;
  const guarded: Record<string, (...args: never[]) => void> = {};
  const reported = new Set<HookName>();
  const report = (hook: HookName, err: unknown): void => {
    if (reported.has(hook)) return;
    reported.add(hook);
    try {
      logger.error(
        `${name}: the ${hook} hook of the worker's observer failed; ignoring it (logged once per hook)`,
        err,
      );
    } catch {
      // A logger that throws cannot be told either.
    }
  };
  for (const hook of HOOKS) {
    const fn = observer[hook];
    if (typeof fn !== 'function') continue;
    guarded[hook] = (...args: never[]) => {
      try {
        const r: unknown = (fn as (...a: never[]) => unknown).apply(observer, args);
        if (r !== null && typeof r === 'object' && typeof (r as PromiseLike<unknown>).then === 'function') {
          (r as PromiseLike<unknown>).then(undefined, (err: unknown) => report(hook, err));
        }
      } catch (err) {
        report(hook, err);
      }
    };
  }
  return guarded as WorkerObserver;
}
