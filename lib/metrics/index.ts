/**
 * Worker metrics: the {@link JobMetrics} sink every queue worker and outbox
 * dispatcher reports to, and its Prometheus (prom-client) and OpenTelemetry
 * adapters. Each adapter loads its optional peer only when called.
 */
export { jobMetricsObserver, validateJobMetrics, type JobMetrics, type QueueDepth } from './job-metrics.js';
export {
  createPrometheusMetrics,
  DEFAULT_DURATION_BUCKETS,
  type PrometheusMetricsOptions,
  type PrometheusRegistryLike,
} from './prometheus.js';
export { createOpenTelemetryMetrics, type OpenTelemetryMetricsOptions, type MeterLike } from './opentelemetry.js';
export type { WorkerObserver, RetryReason, HandlerResult, AbandonReason } from '../worker/worker-observer.js';
