import type { Job } from '../../contract/types.js';
import { OUTBOX_HANDLER_METADATA } from '../alkstore.constants.js';
import { declareHandle, recordHandlerSite } from '../alkstore.registry.js';
import type { OutboxSettings } from '../../outbox/index.js';
import type { OutboxHandlerOptions } from '../interfaces/handler-options.interface.js';
import type { OutboxRef } from '../queue-ref.js';
import { appendMethodMetadata, composeMethodDecorators } from '../utils/append-metadata.js';
import type { TypedMethodDecorator } from './typed-method-decorator.js';

/**
 * Delivers the messages of `outbox`: the module runs one `OutboxDispatcher`
 * per decorated method, which calls it with each claimed `Job`. Return to ack;
 * throw to retry with backoff; throw `PermanentError` to dead-letter at once.
 * Delivery is at-least-once: make the method idempotent.
 *
 * `options` set this handler's dispatcher ({@link OutboxHandlerOptions}: the shared `concurrency`,
 * `leaseMs`, `maxAttempts`, `backoffBaseMs`, `idlePollIntervalMs`, `metrics`, and the outbox's own claim
 * size, timeouts and ordering), or give a built `OutboxSettings` (`OutboxSettings.fromEnv(…)`).
 * One handler per outbox per application.
 * Given an {@link OutboxRef} (`defineOutbox<T>(name)`), the method must
 * accept a `Job<T>`. `AlkstoreModule.forRoot` provides the outbox's handle
 * for `@InjectOutbox`.
 */
export function OutboxHandler<T>(
  outbox: OutboxRef<T>,
  options?: OutboxHandlerOptions | OutboxSettings,
): TypedMethodDecorator<(job: Job<T>, signal: AbortSignal) => unknown>;
export function OutboxHandler(outbox: string, options?: OutboxHandlerOptions | OutboxSettings): MethodDecorator;
export function OutboxHandler(
  outbox: string | OutboxRef<unknown>,
  options?: OutboxHandlerOptions | OutboxSettings,
): MethodDecorator {
  const name = typeof outbox === 'string' ? outbox : outbox.name;
  const opts = typeof outbox === 'string' ? undefined : outbox.opts;
  declareHandle('outbox', name, opts);
  return composeMethodDecorators(
    appendMethodMetadata(
      OUTBOX_HANDLER_METADATA,
      opts === undefined ? { outbox: name, settings: options } : { outbox: name, settings: options, opts },
    ),
    recordHandlerSite('outbox', name, '@OutboxHandler'),
  );
}
