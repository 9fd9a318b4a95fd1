import { Inject } from '@nestjs/common';
import { getOutboxToken, getQueueToken } from '../alkstore.constants.js';
import { recordInjection, type HandleKind } from '../alkstore.registry.js';
import type { OutboxRef, QueueRef } from '../queue-ref.js';

/**
 * Injects the `Queue` handle of `queue`: one a `@QueueHandler` or `@Scheduled`
 * works, one listed in `forRoot({ queues })`, or one registered with
 * `forFeature`. Type the parameter `Queue<T>` (or `QueueOf<typeof REF>`) so
 * `enqueue` takes what the handler's `Job<T>` expects.
 */
export function InjectQueue(queue: string | QueueRef<unknown>): ParameterDecorator & PropertyDecorator {
  return recorded('queue', typeof queue === 'string' ? queue : queue.name, Inject(getQueueToken(queue)));
}

/** Injects the `Outbox` handle of `outbox` (handled by an `@OutboxHandler`, or listed in `forRoot({ outboxes })` / `forFeature`). */
export function InjectOutbox(outbox: string | OutboxRef<unknown>): ParameterDecorator & PropertyDecorator {
  return recorded('outbox', typeof outbox === 'string' ? outbox : outbox.name, Inject(getOutboxToken(outbox)));
}

/** Nest's `Inject`, plus a record of where it was used (the bootstrap check names the class and parameter). */
function recorded(
  kind: HandleKind,
  name: string,
  inject: PropertyDecorator & ParameterDecorator,
): ParameterDecorator & PropertyDecorator {
  return ((target: object, property: string | symbol | undefined, index?: number) => {
    if (typeof name === 'string') recordInjection(kind, name, target, property, index);
    (inject as (t: object, p: string | symbol | undefined, i?: number) => void)(target, property, index);
  }) as ParameterDecorator & PropertyDecorator;
}
