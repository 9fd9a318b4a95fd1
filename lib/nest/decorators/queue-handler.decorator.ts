import type { Job } from '../../contract/types.js';
import { QUEUE_HANDLER_METADATA } from '../alkstore.constants.js';
import { declareHandle, recordHandlerSite } from '../alkstore.registry.js';
import type { QueueHandlerOptions } from '../interfaces/handler-options.interface.js';
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
  const merged: QueueHandlerOptions =
    typeof queue === 'string' || queue.opts === undefined || options.queueOpts !== undefined
      ? options
      : { ...options, queueOpts: queue.opts };
  declareHandle('queue', name, merged.queueOpts);
  return composeMethodDecorators(
    appendMethodMetadata(QUEUE_HANDLER_METADATA, { queue: name, options: merged }),
    recordHandlerSite('queue', name, '@QueueHandler'),
  );
}
