import type { Job } from '../../contract/types.js';
import { OUTBOX_HANDLER_METADATA } from '../alkstore.constants.js';
import { declareHandle, recordHandlerSite } from '../alkstore.registry.js';
import type { OutboxHandlerSettings } from '../interfaces/handler-options.interface.js';
import type { OutboxRef } from '../queue-ref.js';
import { appendMethodMetadata, composeMethodDecorators } from '../utils/append-metadata.js';
import type { TypedMethodDecorator } from './typed-method-decorator.js';

/**
 * Delivers the messages of `outbox`: the module runs one `OutboxDispatcher`
 * per decorated method, which calls it with each claimed `Job`. Return to ack;
 * throw to retry with backoff; throw `PermanentError` to dead-letter at once.
 * Delivery is at-least-once: make the method idempotent.
 *
 * `settings` override the dispatcher's settings (claim size, concurrency, lease, timeouts,
 * retry policy) for this handler. One handler per outbox per application.
 * Given an {@link OutboxRef} (`defineOutbox<T>(name)`), the method must
 * accept a `Job<T>`. `AlkstoreModule.forRoot` provides the outbox's handle
 * for `@InjectOutbox`.
 */
export function OutboxHandler<T>(
  outbox: OutboxRef<T>,
  settings?: OutboxHandlerSettings,
): TypedMethodDecorator<(job: Job<T>, signal: AbortSignal) => unknown>;
export function OutboxHandler(outbox: string, settings?: OutboxHandlerSettings): MethodDecorator;
export function OutboxHandler(outbox: string | OutboxRef<unknown>, settings?: OutboxHandlerSettings): MethodDecorator {
  const name = typeof outbox === 'string' ? outbox : outbox.name;
  const opts = typeof outbox === 'string' ? undefined : outbox.opts;
  declareHandle('outbox', name, opts);
  return composeMethodDecorators(
    appendMethodMetadata(
      OUTBOX_HANDLER_METADATA,
      opts === undefined ? { outbox: name, settings } : { outbox: name, settings, opts },
    ),
    recordHandlerSite('outbox', name, '@OutboxHandler'),
  );
}
