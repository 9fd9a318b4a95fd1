import { performance } from 'node:perf_hooks';
import { isPermanent, type BatchOutcomes, type WorkerCoreOptions } from './worker-options.js';
import { abortJob, type Tracked } from './tracked.js';
import type { HandlerResult } from './worker-observer.js';

// One handler call: the user's handler (or batch handler) inside `wrap`, with the optional timeout, turned
// into one result per job.

const TIMEOUT = Symbol('timeout');

/**
 * Where a handler call reports: built once per worker, so a call allocates no callbacks of its own
 * (at 10 000 jobs in flight every per-call closure and promise is 10 000 of them).
 */
export interface HandlerCallSink {
  /** The call's duration (0 unless `timed`), once per call, before the results. */
  measured(durationMs: number): void;
  /** One job's result. */
  settle(t: Tracked, result: HandlerResult, error: unknown, durationMs: number): void;
  /** `measured` or `settle` threw: the call's bookkeeping failed. */
  failed(items: readonly Tracked[], err: unknown): void;
  /** Last, always, whatever happened. */
  done(): void;
}

/**
 * Calls the handler for `items` (one job, or a batch) with `signal`, and reports each job's result to
 * `sink.settle(t, result, error, durationMs)`, after `sink.measured(durationMs)`, then `sink.done()`.
 * `durationMs` is measured when `timed` (0 otherwise). A handler that outruns `handlerTimeoutMs` is
 * reported as `timeout` and its job's own abort controller is aborted. Never rejects (when the sink
 * does not throw from `failed` or `done`).
 */
export async function callHandler(
  o: WorkerCoreOptions,
  batchMode: boolean,
  items: readonly Tracked[],
  signal: AbortSignal,
  timed: boolean,
  sink: HandlerCallSink,
): Promise<void> {
  try {
    const started = timed ? performance.now() : 0;
    let result: HandlerResult = 'ok';
    let error: unknown = null;
    let outcomes: BatchOutcomes = undefined;
    try {
      outcomes = (await (o.wrap || o.handlerTimeoutMs !== undefined
        ? guarded(o, batchMode, items, signal)
        : direct(o, batchMode, items, signal))) as BatchOutcomes;
    } catch (err) {
      if (err instanceof TimedOut) {
        result = 'timeout';
        error = err.error;
      } else {
        error = err;
        result = isPermanent(err) ? 'permanent' : 'error';
      }
    }
    const durationMs = timed ? performance.now() - started : 0;
    sink.measured(durationMs);
    for (let i = 0; i < items.length; i++) {
      const t = items[i]!;
      let r = result;
      let e = error;
      if (r === 'ok' && batchMode && Array.isArray(outcomes) && outcomes[i] instanceof Error) {
        e = outcomes[i];
        r = isPermanent(e) ? 'permanent' : 'error';
      }
      // A single handler's return value is its job's result (written only with `keepResults`).
      if (r === 'ok' && !batchMode) t.result = outcomes;
      sink.settle(t, r, e, durationMs);
    }
  } catch (err) {
    sink.failed(items, err);
  } finally {
    sink.done();
  }
}

/**
 * The plain single-job call (no `wrap`; with or without `handlerTimeoutMs`), the common case, without an async frame: the
 * handler's promise is watched by two functions bound to the job's record, so a call in flight holds one
 * reaction, one derived promise and two 48-byte bound functions (an async frame with its await closures,
 * context and registers is about three times that; two closures and their context, 152 bytes). Same
 * reports as {@link callHandler}: a synchronous throw is reported before this returns, a settled promise
 * one microtask after it settles.
 */
export function singleCaller(
  o: WorkerCoreOptions,
  sink: HandlerCallSink,
): (t: Tracked, signal: AbortSignal, timed: boolean) => void {
  const handler = o.handler!;
  const ms = o.handlerTimeoutMs;
  // The timer of each call in flight when a timeout is set: a call that settles clears it, one that outruns it
  // is reported as `timeout` (its job's controller aborted first) and its late result is dropped.
  const timers = ms === undefined ? null : new Map<Tracked, ReturnType<typeof setTimeout>>();
  const report = (t: Tracked, result: HandlerResult, value: unknown): void => {
    try {
      const durationMs = t.startedAt < 0 ? 0 : performance.now() - t.startedAt;
      sink.measured(durationMs);
      // A single handler's return value is its job's result (written only with `keepResults`).
      if (result === 'ok') t.result = value;
      sink.settle(t, result, result === 'ok' ? null : value, durationMs);
    } catch (err) {
      sink.failed([t], err);
    } finally {
      sink.done();
    }
  };
  // Methods of an object literal: a function that tsx/esbuild renames with `__name` (a declaration) has
  // its own `name` property, and binding it then costs 336 bytes instead of 48.
  /** False when the call of `t` timed out already (its result was reported as `timeout`). */
  const current = (t: Tracked): boolean => {
    if (timers === null) return true;
    const timer = timers.get(t);
    if (timer === undefined) return false;
    clearTimeout(timer);
    timers.delete(t);
    return true;
  };
  // The errors this caller's timeouts aborted with: with `turnSignals` a job started in the same turn fails with
  // one (their shared signal aborted), and it timed out as much as the job whose timer fired first.
  const timeoutErrors = o.turnSignals ? new WeakSet<object>() : null;
  const timedOut = (t: Tracked): void => {
    if (!timers!.delete(t)) return;
    const error = o.timeoutError ? o.timeoutError(ms!) : new Error(`handler timed out after ${ms!} ms`);
    timeoutErrors?.add(error);
    abortJob(t, error);
    report(t, 'timeout', error);
  };
  const on = {
    fulfilled(this: Tracked, value: unknown): void {
      if (current(this)) report(this, 'ok', value);
    },
    rejected(this: Tracked, err: unknown): void {
      if (!current(this)) return;
      if (timeoutErrors !== null && typeof err === 'object' && err !== null && timeoutErrors.has(err))
        report(this, 'timeout', err);
      else report(this, isPermanent(err) ? 'permanent' : 'error', err);
    },
  };
  return (t, signal, timed) => {
    t.startedAt = timed ? performance.now() : -1;
    let pending: unknown;
    try {
      pending = handler(t.job, signal);
    } catch (err) {
      report(t, isPermanent(err) ? 'permanent' : 'error', err);
      return;
    }
    if (timers !== null) timers.set(t, setTimeout(timedOut, ms, t));
    void Promise.resolve(pending).then(on.fulfilled.bind(t), on.rejected.bind(t));
  };
}

/** The plain call: the handler's promise itself (a synchronous throw lands in the caller's try). */
function direct(o: WorkerCoreOptions, batchMode: boolean, items: readonly Tracked[], signal: AbortSignal): unknown {
  return batchMode
    ? o.batchHandler!(
        items.map((t) => t.job),
        signal,
      )
    : o.handler!(items[0]!.job, signal);
}

/** A handler that outran `handlerTimeoutMs`: `error` is what the job fails with. */
class TimedOut {
  constructor(readonly error: unknown) {}
}

/** The call inside `wrap`, and raced against `handlerTimeoutMs` when one is set (rejects with {@link TimedOut}). */
async function guarded(
  o: WorkerCoreOptions,
  batchMode: boolean,
  items: readonly Tracked[],
  signal: AbortSignal,
): Promise<unknown> {
  const jobs = items.map((t) => t.job);
  // async: a synchronous throw of the handler becomes a rejection.
  const invoke = async (): Promise<unknown> =>
    batchMode ? o.batchHandler!(jobs, signal) : o.handler!(jobs[0]!, signal);
  const attempt = o.wrap ? o.wrap(jobs, invoke) : invoke();
  if (o.handlerTimeoutMs === undefined) return attempt;
  const ms = o.handlerTimeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<typeof TIMEOUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMEOUT), ms);
  });
  try {
    const r = await Promise.race([attempt, timedOut]);
    if (r !== TIMEOUT) return r;
  } finally {
    clearTimeout(timer);
  }
  const error = o.timeoutError ? o.timeoutError(ms) : new Error(`handler timed out after ${ms} ms`);
  abortJob(items[0]!, error);
  throw new TimedOut(error);
}
