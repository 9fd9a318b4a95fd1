import * as contract from './contract/index.js';
import * as cron from './internal/load-cron.js';

// The internals the root entry used to export (issue #23 item 4). They stay importable from `alkstore/contract`
// (and `alkstore/tracing` for the trace hook's replacement); the root re-exports them, deprecated, until 0.4.

/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const AUDIT_STREAM = contract.AUDIT_STREAM;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const CATCH_UP_GRACE_MS = contract.CATCH_UP_GRACE_MS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const CATCH_UP_POLICIES = contract.CATCH_UP_POLICIES;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const DEFAULT_QUEUE_OPTS = contract.DEFAULT_QUEUE_OPTS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const LISTENER_RECONNECTED_CHANNEL = contract.LISTENER_RECONNECTED_CHANNEL;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const MAX_BACKOFF_MS = contract.MAX_BACKOFF_MS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const MAX_INSTANT_MS = contract.MAX_INSTANT_MS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const MAX_TIMER_MS = contract.MAX_TIMER_MS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const NEVER_MS = contract.NEVER_MS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const OUTBOX_QUEUE_OPTS = contract.OUTBOX_QUEUE_OPTS;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const RETENTION_LOCK = contract.RETENTION_LOCK;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const SCHEDULER_LOCK = contract.SCHEDULER_LOCK;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const SCHEDULES_WAKE_CHANNEL = contract.SCHEDULES_WAKE_CHANNEL;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const SCHEDULE_CATCH_UP_CAP = contract.SCHEDULE_CATCH_UP_CAP;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const ackBatchInput = contract.ackBatchInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const asOption = contract.asOption;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const backoffCapMs = contract.backoffCapMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const backoffDelayMs = contract.backoffDelayMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const backoffRangeMs = contract.backoffRangeMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const bulkItems = contract.bulkItems;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const claimInput = contract.claimInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const decodeHeaders = contract.decodeHeaders;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const decodePayload = contract.decodePayload;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const describeFloor = contract.describeFloor;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const dueBoundaries = contract.dueBoundaries;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const dueFireBoundaries = contract.dueFireBoundaries;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const dueFires = contract.dueFires;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const encodeHeaders = contract.encodeHeaders;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const encodePayload = contract.encodePayload;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const envelopeHeaders = contract.envelopeHeaders;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const firstFireAt = contract.firstFireAt;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const jobIdsInput = contract.jobIdsInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const joinTransactionInput = contract.joinTransactionInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const limitInput = contract.limitInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const listDeadInput = contract.listDeadInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const maxPayloadBytesOption = contract.maxPayloadBytesOption;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const optionalKey = contract.optionalKey;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const optionalObject = contract.optionalObject;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const optionalSignal = contract.optionalSignal;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const parseCatchUp = contract.parseCatchUp;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const parseEverySpec = contract.parseEverySpec;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const queueWakeChannel = contract.queueWakeChannel;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const rateAllowance = contract.rateAllowance;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireArray = contract.requireArray;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireBatchSize = contract.requireBatchSize;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireBoolean = contract.requireBoolean;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireCount = contract.requireCount;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireDurationMs = contract.requireDurationMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireFunction = contract.requireFunction;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireInstantMs = contract.requireInstantMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireInt = contract.requireInt;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireJobId = contract.requireJobId;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireMaxAttempts = contract.requireMaxAttempts;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireNonBlankString = contract.requireNonBlankString;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireNonNegativeMs = contract.requireNonNegativeMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireOffset = contract.requireOffset;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requirePositiveInt = contract.requirePositiveInt;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requirePositiveMs = contract.requirePositiveMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requirePriority = contract.requirePriority;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireRandomDraw = contract.requireRandomDraw;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireSignal = contract.requireSignal;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireString = contract.requireString;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const requireTimerMs = contract.requireTimerMs;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const resolveInboxOpts = contract.resolveInboxOpts;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const resolveJobExtras = contract.resolveJobExtras;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const resolveJobStamp = contract.resolveJobStamp;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const resolveQueueOpts = contract.resolveQueueOpts;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const resolveRateLimit = contract.resolveRateLimit;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const runSchedulesInput = contract.runSchedulesInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const scheduleHeaders = contract.scheduleHeaders;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const scheduleOptsInput = contract.scheduleOptsInput;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const streamWakeChannel = contract.streamWakeChannel;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const utf8Length = contract.utf8Length;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const validateKey = contract.validateKey;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const validateName = contract.validateName;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const validatePgSchema = contract.validatePgSchema;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const validateStoredName = contract.validateStoredName;
/** @deprecated Internal helper. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export const validateUniqueKey = contract.validateUniqueKey;
/** @deprecated Internal helper (it loads croner); the root entry stops exporting it in 0.4. */
export const parseScheduleSpec = cron.parseScheduleSpec;
/** @deprecated Internal helper (it loads croner); the root entry stops exporting it in 0.4. */
export const parseScheduleSpecSync = cron.parseScheduleSpecSync;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type JobExtras = contract.JobExtras;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type JobExtrasInput = contract.JobExtrasInput;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type JobStamp = contract.JobStamp;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type JobWrite = contract.JobWrite;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type EverySpec = contract.EverySpec;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type ScheduleSpec = contract.ScheduleSpec;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type CronStepper = contract.CronStepper;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type CronCompiler = contract.CronCompiler;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type DueFires = contract.DueFires;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type DueBoundaries = contract.DueBoundaries;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type NameKind = contract.NameKind;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type KeyKind = contract.KeyKind;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type ClaimInput = contract.ClaimInput;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type ListDeadInput = contract.ListDeadInput;
/** @deprecated Internal type. Import it from `alkstore/contract`; the root entry stops exporting it in 0.4. */
export type ScheduleOptsInput = contract.ScheduleOptsInput;
