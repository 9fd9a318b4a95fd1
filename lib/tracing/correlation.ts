import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Job } from '../contract/types.js';
import { optionalObject, requireFunction, requireNonBlankString } from '../contract/validate.js';
import { headersOf } from './trace-headers.js';

/** Header carrying the id shared by every message of one business flow. */
export const CORRELATION_ID_HEADER = 'correlation-id';
/** Header carrying the id of the job (or request) that caused this message. */
export const CAUSATION_ID_HEADER = 'causation-id';

const current = new AsyncLocalStorage<{ correlationId: string; causationId?: string }>();

/**
 * Runs `fn` with `correlationId` current (and `causationId`, if given): {@link correlationHeaders} inside it carry them.
 * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming `correlationId` or `causationId` when it
 *   is not a non-blank string, or `fn` when it is not a function; `fn` is not called then.
 */
export function withCorrelationId<T>(correlationId: string, fn: () => T, causationId?: string): T {
  requireNonBlankString('correlationId', correlationId);
  requireFunction('fn', fn);
  if (causationId !== undefined) requireNonBlankString('causationId', causationId);
  return current.run(causationId === undefined ? { correlationId } : { correlationId, causationId }, fn);
}

/** The correlation id current in this async context (a handler runs with its job's), if any. */
export function currentCorrelationId(): string | undefined {
  return current.getStore()?.correlationId;
}

/**
 * Headers for an enqueue: `correlation-id` (the given id, else the current
 * one, else a new UUID) and `causation-id` when one is current (inside a
 * handler: the id of the job being handled), merged over `extra`.
 *
 * ```ts
 * await queue.enqueue(payload, { headers: correlationHeaders() });
 * ```
 *
 * @throws InvalidArgument naming `correlationId` when one is given that is not a non-blank string, or `extra`
 *   when it is not an object (the enqueue checks the header values themselves).
 */
export function correlationHeaders(
  correlationId?: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  if (correlationId !== undefined) requireNonBlankString('correlationId', correlationId);
  optionalObject('extra', extra);
  const ctx = current.getStore();
  const out: Record<string, string> = {
    ...extra,
    [CORRELATION_ID_HEADER]: correlationId ?? ctx?.correlationId ?? randomUUID(),
  };
  if (ctx?.causationId !== undefined && out[CAUSATION_ID_HEADER] === undefined)
    out[CAUSATION_ID_HEADER] = ctx.causationId;
  return out;
}

/** The correlation id a job carries, if any. */
export function correlationIdOf(job: Job): string | undefined {
  return headersOf(job)[CORRELATION_ID_HEADER];
}

/** Runs a handler with its job's correlation id current and the job as the cause of what it enqueues. */
export function runInJobCorrelation<T>(job: Job, run: () => T): T {
  const id = correlationIdOf(job);
  if (id === undefined) return run();
  return current.run({ correlationId: id, causationId: `job:${job.queue}:${job.id}` }, run);
}
