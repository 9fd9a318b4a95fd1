/**
 * `nestjs-alkstore`: one `Store` over PostgreSQL or embedded SQLite.
 *
 * `openStore({ url })` picks the engine from the URL and loads only that
 * engine's driver, so a PostgreSQL-only application never loads better-sqlite3.
 *
 * The root exports what an application calls: `openStore`, the `Store` (type and
 * Nest injection token), the error classes, the limits and header names it may
 * read, every public type, the outbox dispatcher, the queue worker, reliable sync
 * and the `open` function of each ORM for `store.joinTransaction`. Nest wiring is
 * in `nestjs-alkstore/nest`, engine and extension authors' helpers in
 * `nestjs-alkstore/extend`.
 */
export type * from './contract/types.js';
export * from './contract/admin.js';
export type { JsonValue, Jsonified, JsonPayload } from './contract/codec.js';
export type { EnvelopeInit, MessageEnvelope } from './contract/envelope.js';
export type { AlkstoreErrorCode } from './contract/errors.js';
export type { InboxClaim, InboxFailure, InboxEntry, InboxOpts, InboxSettings } from './contract/inbox.js';
export type { EnqueueHeadersHook, JobHeaders, OnConflict } from './contract/job-extras.js';
export type { EnqueueOpts, JobOpts, QueueOpts } from './contract/options.js';
export type { KeySource, KeySources, QueueLimits } from './contract/limits.js';
export type { OpenStoreOptions } from './store-options.js';
export type { ChildPolicy, ChildResult, FlowJob, FlowNode } from './contract/flows.js';
export { FLOW_HEADER } from './contract/flows.js';
export { openStore } from './open-store.js';
export { IncompatiblePeer, MissingPeer } from './internal/load-peer.js';
export {
  AlkstoreError,
  AlreadyRunning,
  Closed,
  Codec,
  Database,
  InvalidArgument,
  InvalidName,
  InvalidOption,
  InvalidSpec,
  LeadershipLost,
  PayloadTooLarge,
  PermanentError,
  PublishFailed,
  ReservedName,
  TransactionInProgress,
  TransactionTimeout,
} from './contract/errors.js';
export { InvalidFlow } from './contract/errors.js';
export { DEFAULT_MAX_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES_LIMIT, MAX_PAYLOAD_DEPTH } from './contract/codec.js';
export { MAX_HEADERS_BYTES } from './contract/job-extras.js';
export {
  MAX_ATTEMPTS,
  MAX_BATCH,
  MAX_KEY_BYTES,
  MAX_NAME_BYTES,
  MAX_PRIORITY,
  MIN_PRIORITY,
  RESERVED_PREFIX,
} from './contract/validate.js';
export { outboxQueueName } from './contract/names.js';
export {
  CONTENT_TYPE_HEADER,
  ENVELOPE_CAUSATION_HEADER,
  ENVELOPE_CORRELATION_HEADER,
  MESSAGE_TYPE_HEADER,
  MESSAGE_VERSION_HEADER,
  readEnvelope,
} from './contract/envelope.js';
export { SCHEDULE_BOUNDARY_HEADER, SCHEDULE_NAME_HEADER, scheduleBoundaryOf } from './contract/schedule-headers.js';
export { ResultTimeout, JobDead, JobCancelled } from './contract/errors.js';
export type { WaitOpts, CancelTarget } from './contract/results.js';
// The contract's `Store` interface merged with the class Nest injects it by: one name for both.
export { Store } from './nest/store.token.js';

// The outbox dispatcher.
export {
  OutboxDispatcher,
  FAILING_PUBLISHES_DEGRADED,
  type OutboxDispatcherOptions,
  type OutboxDeliveryHandler,
} from './outbox/outbox-dispatcher.js';
export {
  OutboxSettings,
  DEFAULT_OUTBOX_SETTINGS,
  type OutboxSettingsInit,
  type OutboxSettingsInput,
  type OutboxOrdering,
} from './outbox/outbox-settings.js';
export {
  RetryPolicy,
  DEFAULT_RETRY_SETTINGS,
  validateRetrySettings,
  type RetrySettings,
  type RetryDecision,
  type DeadReason,
} from './outbox/retry-policy.js';
export { listDead, retryDead, purgeDead, purgeDeadOlderThan, type ListDeadLettersOpts } from './outbox/dead-letters.js';
export { PublishTimeout, StoreCallTimeout } from './worker/timers.js';

// The queue worker (no Nest needed) and its lifecycle events.
export { QueueWorker, AUTO_PREFETCH_MAX, type QueueWorkerOptions } from './worker/queue-worker.js';
export {
  isPermanent,
  type FailureKind,
  type FailureOutcome,
  type BatchOutcomes,
  type HandlerWrapper,
} from './worker/worker-options.js';
export {
  WorkerEvents,
  WORKER_EVENT_NAMES,
  type WorkerEventMap,
  type WorkerEventName,
  type WorkerEventListener,
} from './worker/worker-events.js';

// Reliable sync: epoch frames kept until a peer acknowledges them.
export * from './reliable-sync/index.js';

// Join an ORM's transaction: `store.joinTransaction(open, fn)` with the `open` of your ORM.
export * from './adapters/index.js';
