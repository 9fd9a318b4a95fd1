import { QUEUE_HANDLER_METADATA } from '../alkstore.constants.js';
import type { QueueHandlerOptions } from '../interfaces/handler-options.interface.js';
import { appendMethodMetadata } from '../utils/append-metadata.js';

/**
 * Works the jobs of `queue`: up to `concurrency` at once, woken by enqueue
 * commits, with a safety poll. The method gets the claimed `Job` (call
 * `job.heartbeat(ms)` during long work). Return to ack; throw to retry with
 * the queue's backoff; throw `PermanentError` to dead-letter at once. A second
 * argument, an `AbortSignal`, aborts when shutdown stops waiting for the job.
 * One handler per queue per application.
 */
export function QueueHandler(queue: string, options: QueueHandlerOptions = {}): MethodDecorator {
  return appendMethodMetadata(QUEUE_HANDLER_METADATA, { queue, options });
}
