import type { EnqueueHeadersHook } from '../contract/job-extras.js';
import type { Job } from '../contract/types.js';
import { loadOtelApi, otelApiIfLoaded } from './otel-api.js';

/** W3C trace context header names, as stored in job headers. */
export const TRACEPARENT_HEADER = 'traceparent';
export const TRACESTATE_HEADER = 'tracestate';

type Headers = Readonly<Record<string, string>>;

/** The headers of a job (empty when it has none). */
export function headersOf(job: Job): Headers {
  return (job as { headers?: Headers | null }).headers ?? EMPTY;
}
const EMPTY: Headers = Object.freeze({});

/**
 * `headers` plus the active span's W3C trace context (`traceparent`, and
 * `tracestate` when set), when `@opentelemetry/api` is loaded and a span is
 * active; otherwise `headers` unchanged. Headers the caller set win.
 */
export function withTraceContext<H extends Headers | undefined>(headers: H): H | Headers {
  const api = otelApiIfLoaded();
  if (!api) return headers;
  const span = api.trace.getSpan(api.context.active());
  if (!span) return headers;
  const sc = span.spanContext();
  if (!api.isSpanContextValid(sc)) return headers;
  if (headers && headers[TRACEPARENT_HEADER] !== undefined) return headers;
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.context.active(), carrier);
  if (carrier[TRACEPARENT_HEADER] === undefined) {
    // No global propagator registered: write the W3C format ourselves.
    carrier[TRACEPARENT_HEADER] =
      `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
    const state = sc.traceState?.serialize();
    if (state) carrier[TRACESTATE_HEADER] = state;
  }
  const out: Record<string, string> = {};
  if (carrier[TRACEPARENT_HEADER] !== undefined) out[TRACEPARENT_HEADER] = carrier[TRACEPARENT_HEADER];
  if (carrier[TRACESTATE_HEADER] !== undefined) out[TRACESTATE_HEADER] = carrier[TRACESTATE_HEADER];
  return { ...out, ...(headers ?? {}) };
}

/**
 * The `enqueueHeaders` hook `openStore` gives a store: {@link withTraceContext} when `tracing` is
 * not false and `@opentelemetry/api` is installed (loaded here), else undefined.
 */
export async function traceContextHook(tracing: boolean | undefined): Promise<EnqueueHeadersHook | undefined> {
  if (tracing === false) return undefined;
  return (await loadOtelApi()) ? withTraceContext : undefined;
}
