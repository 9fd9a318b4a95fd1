/**
 * Tracing and correlation across queues and the outbox: W3C trace context in
 * job headers (`traceparent`, `tracestate`), handler spans child of the
 * producer's, and a correlation id helper. `@opentelemetry/api` is an
 * optional peer, loaded lazily; without it only the correlation helpers act.
 */
export { withTraceContext, headersOf, TRACEPARENT_HEADER, TRACESTATE_HEADER } from './trace-headers.js';
export {
  withCorrelationId,
  currentCorrelationId,
  correlationHeaders,
  correlationIdOf,
  CORRELATION_ID_HEADER,
  CAUSATION_ID_HEADER,
} from './correlation.js';
export { createTracingWrapper, correlationWrapper } from './handler-span.js';
export { loadOpenTelemetry } from './otel-api.js';
