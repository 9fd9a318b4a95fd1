/**
 * The queue worker ({@link QueueWorker}, no Nest needed), the worker core shared by it and the outbox
 * dispatcher, and its one observation seam: {@link WorkerObserver} (metrics, events, tests) and
 * {@link WorkerEvents} (lifecycle events with listeners).
 *
 * The core is split by mechanism: `worker-options.ts` (options, their checks, the guarded retry policy),
 * `prefetch-buffer.ts`, `lease-renewal.ts`, `outcome-writer.ts` (acks, retries, dead letters),
 * `handoff-taker.ts` (local hand-off), `handler-call.ts`, and `worker-core.ts`, the loop that ties them.
 */
export { WorkerCore } from './worker-core.js';
export {
  isPermanent,
  type WorkerCoreOptions,
  type FailureKind,
  type FailureOutcome,
  type BatchOutcomes,
  type HandlerWrapper,
} from './worker-options.js';
export {
  combineObservers,
  type WorkerObserver,
  type HandlerResult,
  type RetryReason,
  type DeadReason,
  type AbandonReason,
} from './worker-observer.js';
export {
  WorkerEvents,
  WORKER_EVENT_NAMES,
  type WorkerEventMap,
  type WorkerEventName,
  type WorkerEventListener,
} from './worker-events.js';
export { StoreCallTimeout, PublishTimeout } from './timers.js';
export { AdaptivePrefetch, DEFAULT_LEASE_SHARE, type AdaptivePrefetchOptions } from './adaptive-prefetch.js';
export { QueueWorker, AUTO_PREFETCH_MAX, type QueueWorkerOptions } from './queue-worker.js';
