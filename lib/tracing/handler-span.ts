import type * as OtelApi from '@opentelemetry/api';
import type { Job } from '../contract/types.js';
import type { HandlerWrapper } from '../worker/worker-core.js';
import { runInJobCorrelation } from './correlation.js';
import { loadOtelApi } from './otel-api.js';
import { spanContextOf } from './span-context.js';
import { headersOf } from './trace-headers.js';

/**
 * A worker wrapper that runs each handler call in a CONSUMER span named
 * `<label> process`, child of the producer's context from the job's
 * `traceparent` (a batch call gets a new span linked to each job's
 * producer), with the job's correlation id current. Resolves null when
 * `@opentelemetry/api` is not installed (the correlation part alone is then
 * {@link correlationWrapper}).
 */
export async function createTracingWrapper(label: string): Promise<HandlerWrapper | null> {
  const api = await loadOtelApi();
  if (!api) return null;
  return tracingWrapper(api, label);
}

/** Runs each handler call with its (first) job's correlation id current; no tracing. */
export const correlationWrapper: HandlerWrapper = (jobs, run) =>
  jobs.length === 1 ? runInJobCorrelation(jobs[0]!, run) : run();

function tracingWrapper(api: typeof OtelApi, label: string): HandlerWrapper {
  const tracer = api.trace.getTracer('alkstore');
  return (jobs: readonly Job[], run) => {
    const single = jobs.length === 1 ? jobs[0]! : null;
    const remote = single ? spanContextOf(api, headersOf(single)) : null;
    const parent = remote ? api.trace.setSpanContext(api.context.active(), remote) : api.context.active();
    const links: OtelApi.Link[] = [];
    if (!single) {
      for (const job of jobs) {
        const sc = spanContextOf(api, headersOf(job));
        if (sc) links.push({ context: sc });
      }
    }
    const attributes: OtelApi.Attributes = {
      'messaging.system': 'alkstore',
      'messaging.operation.type': 'process',
      'messaging.destination.name': jobs[0]?.queue ?? label,
    };
    if (single) {
      attributes['messaging.message.id'] = String(single.id);
      attributes['alkstore.job.attempt'] = single.attempts;
    } else {
      attributes['messaging.batch.message_count'] = jobs.length;
    }
    const span = tracer.startSpan(`${label} process`, { kind: api.SpanKind.CONSUMER, attributes, links }, parent);
    const inSpan = (): Promise<unknown> =>
      api.context.with(api.trace.setSpan(parent, span), single ? () => runInJobCorrelation(single, run) : run);
    return inSpan().then(
      (r) => {
        span.end();
        return r;
      },
      (err: unknown) => {
        span.recordException(err instanceof Error ? err : String(err));
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
        span.end();
        throw err;
      },
    );
  };
}
