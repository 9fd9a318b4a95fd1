/**
 * alkstore: one `Store` over PostgreSQL or embedded SQLite.
 *
 * `openStore({ url })` picks the engine from the URL and loads only that
 * engine's driver, so a PostgreSQL-only application never loads better-sqlite3.
 *
 * The root exports what an application calls: `openStore`, the error classes,
 * the limits and header names it may read, and every public type. Engine
 * authors and tools find the validation helpers in `alkstore/contract`.
 */
export type * from './contract/types.js';
export type * from './contract/admin.js';
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
export * from './root-deprecated.js';
