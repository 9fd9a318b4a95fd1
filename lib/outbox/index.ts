/**
 * The outbox dispatcher (seed 004): a worker loop that delivers an outbox's
 * messages at least once, with leases, fenced outcomes, a pure retry policy,
 * dead letters, metrics and validated settings. Engine-agnostic: it uses only
 * the public `Queue`/`Job` contract.
 */
export {
  OutboxDispatcher,
  FAILING_PUBLISHES_DEGRADED,
  type OutboxDispatcherOptions,
  type OutboxDeliveryHandler,
} from './outbox-dispatcher.js';
export {
  OutboxSettings,
  DEFAULT_OUTBOX_SETTINGS,
  type OutboxSettingsInit,
  type OutboxSettingsInput,
  type OutboxOrdering,
} from './outbox-settings.js';
export {
  RetryPolicy,
  DEFAULT_RETRY_SETTINGS,
  validateRetrySettings,
  type RetrySettings,
  type RetryDecision,
  type FailureKind,
  type DeadReason,
} from './retry-policy.js';
export {
  NoopOutboxMetrics,
  NOOP_OUTBOX_METRICS,
  type OutboxMetrics,
  type RetryReason,
  type PublishResult,
  type AbandonReason,
} from './outbox-metrics.js';
export { createPromMetrics, type PromMetricsOptions, type PromRegistryLike } from './prom-metrics.js';
export { listDead, retryDead, purgeDead, purgeDeadOlderThan, type ListDeadLettersOpts } from './dead-letters.js';
export { PublishTimeout, StoreCallTimeout } from '../worker/timers.js';
export { PermanentError } from '../contract/errors.js';
