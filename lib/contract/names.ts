import { INTERNAL_QUEUES, RESERVED_PREFIX, validateName } from './validate.js';

/** The reserved prefix, the name kinds and the name and key checks live in the validation module. */
export { RESERVED_PREFIX, validateKey, validateName, type NameKind } from './validate.js';
/** The scheduler's leadership lock. */
export const SCHEDULER_LOCK = '__alkstore_scheduler';
/** The reserved stream of the dashboard's audit log (`store.admin().auditLog()`). */
export const AUDIT_STREAM = '__alkstore_audit';
/** The retention runner's leadership lock. */
export const RETENTION_LOCK = '__alkstore_retention';
/** The wake channel every PostgreSQL receiver gets one wake on after the listener reconnects. */
export const LISTENER_RECONNECTED_CHANNEL = '__alkstore_listener_reconnected__';

/** The backing queue of an outbox: `__alkstore_outbox:<name>`. Validates the outbox name. */
export function outboxQueueName(outbox: string): string {
  return `${RESERVED_PREFIX}outbox:${validateName('outbox', outbox)}`;
}

/** Prefix of the queues that carry workflow runs (`__alkstore_workflows:<namespace>`). */
export const WORKFLOWS_QUEUE_PREFIX = `${RESERVED_PREFIX}workflows:`;

/**
 * The queue that carries the runs of workflows namespace `ns`: `__alkstore_workflows:<ns>`. Validates
 * `ns` and registers the name so that this process's queue handles and transactions accept it.
 */
export function workflowsQueueName(ns: string): string {
  const name = `${WORKFLOWS_QUEUE_PREFIX}${validateName('stream', ns)}`;
  INTERNAL_QUEUES.add(name);
  return name;
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
