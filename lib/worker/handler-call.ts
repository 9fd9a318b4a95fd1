import { performance } from 'node:perf_hooks';
import { isPermanent, type BatchOutcomes, type WorkerCoreOptions } from './worker-options.js';
import type { Tracked } from './tracked.js';
import type { HandlerResult } from './worker-observer.js';

// One handler call: the user's handler (or batch handler) inside `wrap`, with the optional timeout, turned
// into one result per job.

const TIMEOUT = Symbol('timeout');

/**
 * Calls the handler for `items` (one job, or a batch) with `signal`, and reports each job's result with
 * `each(t, result, error, durationMs)`, after `measured(durationMs)`. `durationMs` is measured when `timed`
 * (0 otherwise). A handler that
 * outruns `handlerTimeoutMs` is reported as `timeout` and its job's own abort controller is aborted.
 */
export async function callHandler(
  o: WorkerCoreOptions,
  batchMode: boolean,
  items: readonly Tracked[],
  signal: AbortSignal,
  timed: boolean,
  measured: (durationMs: number) => void,
  each: (t: Tracked, result: HandlerResult, error: unknown, durationMs: number) => void,
): Promise<void> {
  const started = timed ? performance.now() : 0;
  const jobs = batchMode || o.wrap ? items.map((t) => t.job) : null;
  const single = items[0]!.job;
  let result: HandlerResult = 'ok';
  let error: unknown = null;
  let outcomes: BatchOutcomes = undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    // async: a synchronous throw of the handler becomes a rejection.
    const invoke = async (): Promise<unknown> => (batchMode ? o.batchHandler!(jobs!, signal) : o.handler!(single, signal));
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
  measured(durationMs);
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
    each(t, r, e, durationMs);
  }
}
