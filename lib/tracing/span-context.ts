import type * as OtelApi from '@opentelemetry/api';
import { TRACEPARENT_HEADER, TRACESTATE_HEADER } from './trace-headers.js';

type Headers = Readonly<Record<string, string>>;

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The remote span context a job's headers carry, or null. */
export function spanContextOf(api: typeof OtelApi, headers: Headers): OtelApi.SpanContext | null {
  const tp = headers[TRACEPARENT_HEADER];
  if (tp === undefined) return null;
  const ctx = api.propagation.extract(api.ROOT_CONTEXT, headers);
  const fromPropagator = api.trace.getSpanContext(ctx);
  if (fromPropagator && api.isSpanContextValid(fromPropagator)) return fromPropagator;
  const m = TRACEPARENT.exec(tp.trim());
  if (!m || m[1] === 'ff') return null;
  const sc: OtelApi.SpanContext = {
    traceId: m[2]!,
    spanId: m[3]!,
    traceFlags: parseInt(m[4]!, 16) & 1,
    isRemote: true,
  };
  const ts = headers[TRACESTATE_HEADER];
  if (ts) sc.traceState = api.createTraceState(ts);
  return api.isSpanContextValid(sc) ? sc : null;
}
