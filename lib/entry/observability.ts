/**
 * `nestjs-alkstore/observability`: the metrics sinks of queue workers, outbox dispatchers and
 * workflows' neighbours (Prometheus through prom-client, OpenTelemetry), the worker observation seam,
 * and tracing (W3C trace context in job headers, handler spans, correlation ids). Each adapter loads
 * its optional peer only when called. The Nest health indicator is in `nestjs-alkstore/nest`.
 */
export * from '../metrics/index.js';
export * from '../tracing/index.js';
export { combineObservers } from '../worker/worker-observer.js';
export {
  NoopOutboxMetrics,
  NOOP_OUTBOX_METRICS,
  type OutboxMetrics,
  type PublishResult,
  type AbandonReason as OutboxAbandonReason,
} from '../outbox/outbox-metrics.js';
export { createPromMetrics, type PromMetricsOptions, type PromRegistryLike } from '../outbox/prom-metrics.js';
