import { Inject } from '@nestjs/common';
import { getReliableOutboxToken } from './reliable-sync.constants.js';

/** Injects the `ReliableOutbox` registered with `ReliableSyncModule.forFeature({ name })`. */
export function InjectReliableOutbox(name?: string): ParameterDecorator & PropertyDecorator {
  return Inject(getReliableOutboxToken(name));
}
