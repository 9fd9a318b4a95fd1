import { Inject } from '@nestjs/common';
import { getOutboxToken, getQueueToken } from '../alkstore.constants.js';
import type { OutboxRef, QueueRef } from '../queue-ref.js';

/**
 * Injects the `Queue` handle of `queue`: one a `@QueueHandler` or `@Scheduled`
 * works, one listed in `forRoot({ queues })`, or one registered with
 * `forFeature`. Type the parameter `Queue<T>` (or `QueueOf<typeof REF>`) so
 * `enqueue` takes what the handler's `Job<T>` expects.
 */
export function InjectQueue(queue: string | QueueRef<unknown>): ParameterDecorator & PropertyDecorator {
  return Inject(getQueueToken(queue));
}

/** Injects the `Outbox` handle of `outbox` (handled by an `@OutboxHandler`, or listed in `forRoot({ outboxes })` / `forFeature`). */
export function InjectOutbox(outbox: string | OutboxRef<unknown>): ParameterDecorator & PropertyDecorator {
  return Inject(getOutboxToken(outbox));
}
