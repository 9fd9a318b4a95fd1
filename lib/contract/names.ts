import { InvalidName, ReservedName } from './errors.js';

/** The reserved prefix of every engine-owned name. Case-sensitive. */
export const RESERVED_PREFIX = '__alkstore_';
/** The scheduler's leadership lock. */
export const SCHEDULER_LOCK = '__alkstore_scheduler';
/** The retention runner's leadership lock. */
export const RETENTION_LOCK = '__alkstore_retention';
/** The wake channel every PostgreSQL receiver gets one wake on after the listener reconnects. */
export const LISTENER_RECONNECTED_CHANNEL = '__alkstore_listener_reconnected__';

/** Name kinds in the shared (reserved-prefix) namespace. */
export type NameKind = 'channel' | 'stream' | 'queue' | 'outbox' | 'lock' | 'schedule';

/**
 * Validates a consumer-supplied name: `InvalidName` when empty, whitespace-only
 * or not a string; `ReservedName` when it starts with `__alkstore_`.
 */
export function validateName(kind: NameKind, name: unknown): string {
  if (typeof name !== 'string' || name.trim().length === 0) throw new InvalidName(kind, name);
  if (name.startsWith(RESERVED_PREFIX)) throw new ReservedName(kind, name);
  return name;
}

/** Stream event keys and consumer names: free-form, but never empty. */
export function validateKey(kind: 'key' | 'consumer' | 'owner' | 'worker', value: unknown): string {
  if (typeof value !== 'string' || value.trim().length === 0) throw new InvalidName(kind, value);
  return value;
}

/** The backing queue of an outbox: `__alkstore_outbox:<name>`. Validates the outbox name. */
export function outboxQueueName(outbox: string): string {
  return `${RESERVED_PREFIX}outbox:${validateName('outbox', outbox)}`;
}

/** Engine-internal wake channel of a queue. */
export function queueWakeChannel(queue: string): string {
  return `${RESERVED_PREFIX}queue:${queue}`;
}

/** Engine-internal wake channel of a stream. */
export function streamWakeChannel(stream: string): string {
  return `${RESERVED_PREFIX}stream:${stream}`;
}

/** Engine-internal wake channel the scheduler runner listens on for schedule changes. */
export const SCHEDULES_WAKE_CHANNEL = `${RESERVED_PREFIX}schedules`;
