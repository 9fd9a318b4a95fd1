import type { Job } from '../../contract/types.js';
import { QUEUE_HANDLER_METADATA } from '../alkstore.constants.js';
import { declareHandle, recordHandlerSite } from '../alkstore.registry.js';
import type { QueueOpts } from '../../contract/options.js';
import { requireDurationMs, requireMaxAttempts } from '../../contract/validate.js';
import type { QueueHandlerMetadata, QueueHandlerOptions } from '../interfaces/handler-options.interface.js';
import type { QueueRef } from '../queue-ref.js';
import { appendMethodMetadata, composeMethodDecorators } from '../utils/append-metadata.js';
import type { TypedMethodDecorator } from './typed-method-decorator.js';

/**
 * Works the jobs of `queue`: up to `concurrency` at once, woken by enqueue
 * commits, with a safety poll. The method gets the claimed `Job` (call
 * `job.heartbeat(ms)` during long work). Return to ack; throw to retry with
 * the queue's backoff; throw `PermanentError` to dead-letter at once. A second
 * argument, an `AbortSignal`, aborts when shutdown stops waiting for the job.
 * One handler per queue per application.
 *
 * Given a {@link QueueRef} (`defineQueue<T>(name)`), the method must accept a
 * `Job<T>` (a batch handler, `Job<T>[]`): a compile error otherwise. `AlkstoreModule.forRoot` provides the
 * queue's handle for `@InjectQueue` without a `forFeature`.
 */
export function QueueHandler<T>(
  queue: QueueRef<T>,
  options?: QueueHandlerOptions,
): TypedMethodDecorator<
  ((job: Job<T>, signal: AbortSignal) => unknown) | ((jobs: Job<T>[], signal: AbortSignal) => unknown)
>;
export function QueueHandler(queue: string, options?: QueueHandlerOptions): MethodDecorator;
export function QueueHandler(queue: string | QueueRef<unknown>, options: QueueHandlerOptions = {}): MethodDecorator {
  const name = typeof queue === 'string' ? queue : queue.name;
  const { queueOpts, misuse } = handleOpts(options, typeof queue === 'string' ? undefined : queue.opts);
  const merged: QueueHandlerOptions =
    queueOpts === undefined || options === null || typeof options !== 'object' ? options : { ...options, queueOpts };
  declareHandle('queue', name, queueOpts);
  const meta: QueueHandlerMetadata = { queue: name, options: merged, ...(misuse === undefined ? {} : { misuse }) };
  return composeMethodDecorators(
    appendMethodMetadata(QUEUE_HANDLER_METADATA, meta),
    recordHandlerSite('queue', name, '@QueueHandler'),
  );
}

/**
 * The queue options of the handle this application makes for the queue: the handler's `queueOpts` (or
 * its `defineQueue` options) with the handler's `maxAttempts` and `backoffBaseMs`. Attempts and backoff
 * given in two places are a misuse the explorer reports (decorators only record).
 */
function handleOpts(
  options: QueueHandlerOptions,
  refOpts: QueueOpts | undefined,
): { queueOpts: QueueOpts | undefined; misuse?: QueueHandlerMetadata['misuse'] } {
  if (options === null || typeof options !== 'object') return { queueOpts: refOpts };
  const given = options.queueOpts as QueueOpts | undefined;
  const base = given ?? refOpts;
  let misuse: QueueHandlerMetadata['misuse'];
  const retries: { maxAttempts?: number; backoffBaseMs?: number } = {};
  for (const f of ['maxAttempts', 'backoffBaseMs'] as const) {
    const own = options[f];
    if (given !== null && typeof given === 'object' && given[f] !== undefined)
      misuse ??= { option: `queueOpts.${f}`, reason: `is set on the handler: ${f} (docs/vocabulary.md)` };
    else if (own !== undefined && base?.[f] !== undefined && base[f] !== own)
      misuse ??= { option: f, reason: `is ${String(own)} here and ${String(base[f])} in the defineQueue options` };
    // A bad value stays out of the handle's options: the explorer reports it with the class and method.
    if (own !== undefined && usable(f, own)) retries[f] = own;
  }
  const queueOpts = Object.keys(retries).length === 0 ? base : { ...base, ...retries };
  return misuse === undefined ? { queueOpts } : { queueOpts, misuse };
}

function usable(field: 'maxAttempts' | 'backoffBaseMs', v: unknown): boolean {
  try {
    if (field === 'maxAttempts') requireMaxAttempts(field, v);
    else requireDurationMs(field, v, { allowZero: true });
    return true;
  } catch {
    return false;
  }
}
