/**
 * The engine-agnostic contract: types, errors, name rules and pure functions.
 * Imports nothing from Nest, TypeORM or any database driver.
 */
export * from './errors.js';
export * from './names.js';
export * from './backoff.js';
export * from './schedule-spec.js';
export * from './schedule-headers.js';
export * from './codec.js';
export * from './options.js';
export * from './job-extras.js';
export * from './envelope.js';
export * from './inbox.js';
export * from './queue-settings.js';
export * from './limits.js';
export * from './results.js';
export * from './flows.js';
export type * from './types.js';
export type * from './admin.js';
export {
  LATENCY_BOUNDS_MS,
  LATENCY_BUCKETS,
  latencyBucket,
  latencyQuantile,
  SEARCH_SCAN_ROWS,
  sumLatency,
  WORKER_SCAN_ROWS,
} from './admin.js';
export * from './validate.js';
export * from './renamed-option.js';
