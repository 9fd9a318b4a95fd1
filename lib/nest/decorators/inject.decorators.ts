import { Inject } from '@nestjs/common';
import { getOutboxToken, getQueueToken } from '../alkstore.constants.js';

/** Injects the `Queue` handle registered with `AlkstoreModule.forFeature({ queues: [{ name }] })`. */
export function InjectQueue(name: string): ParameterDecorator & PropertyDecorator {
  return Inject(getQueueToken(name));
}

/** Injects the `Outbox` handle registered with `AlkstoreModule.forFeature({ outboxes: [{ name }] })`. */
export function InjectOutbox(name: string): ParameterDecorator & PropertyDecorator {
  return Inject(getOutboxToken(name));
}
