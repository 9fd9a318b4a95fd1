/**
 * NestJS wiring for reliable sync: `ReliableSyncModule.forFeature` provides
 * `ReliableOutbox` instances, `@InjectReliableOutbox(name)` injects them.
 * Exported from `nestjs-alkstore/nest`.
 */
export { ReliableSyncModule, type ReliableOutboxRegistration } from './reliable-sync.module.js';
export { InjectReliableOutbox } from './inject-reliable-outbox.decorator.js';
export { getReliableOutboxToken } from './reliable-sync.constants.js';
