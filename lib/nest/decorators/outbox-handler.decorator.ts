import { OUTBOX_HANDLER_METADATA } from '../alkstore.constants.js';
import type { OutboxHandlerSettings } from '../interfaces/handler-options.interface.js';
import { appendMethodMetadata } from '../utils/append-metadata.js';

/**
 * Delivers the messages of `outbox`: the module runs one `OutboxDispatcher`
 * per decorated method, which calls it with each claimed `Job`. Return to ack;
 * throw to retry with backoff; throw `PermanentError` to dead-letter at once.
 * Delivery is at-least-once: make the method idempotent.
 *
 * `settings` override the dispatcher's settings (batch size, lease, timeouts,
 * retry policy) for this handler. One handler per outbox per application.
 */
export function OutboxHandler(outbox: string, settings?: OutboxHandlerSettings): MethodDecorator {
  return appendMethodMetadata(OUTBOX_HANDLER_METADATA, { outbox, settings });
}
