import { createHash } from 'node:crypto';
import type * as OtelApi from '@opentelemetry/api';
import {
  promMetricGetter,
  type CounterLike,
  type GaugeLike,
  type HistogramLike,
  type PromRegistryLike,
} from '../internal/prom-client.js';
import { loadOtelApi } from '../tracing/otel-api.js';
import { DEFAULT_DURATION_BUCKETS } from '../metrics/prometheus.js';

/**
 * Where the workflows' metrics go (`createWorkflows({ metrics })`). Labels are the workflow's name and
 * the step's name (both from code, so bounded), never a run id or error text. Calls are synchronous on
 * the worker's path: keep them cheap; a throw is caught and ignored.
 */
export interface WorkflowMetrics {
  /** A run was started (counted by the process whose `start` created it). */
  started(workflow: string): void;
  /** A run ended completed (counted once, by the worker that journaled its end). */
  completed(workflow: string): void;
  /** A run ended failed. */
  failed(workflow: string): void;
  /** A run was cancelled (counted by the process whose `cancel` ended it). */
  cancelled(workflow: string): void;
  /** One attempt of a step (`ctx.step` / `ctx.transaction`) took `durationMs`; `outcome` is `ok` or `error`. */
  stepDuration(workflow: string, step: string, outcome: 'ok' | 'error', durationMs: number): void;
  /**
   * At `createWorkflows` (with a worker): `runs` running runs of `workflow` are pinned to `version`, which
   * no definition given to it serves (0 once one does). Optional.
   */
  unservedRuns?(workflow: string, version: number, runs: number): void;
}

/** Options of {@link createPrometheusWorkflowMetrics}. */
export interface PrometheusWorkflowMetricsOptions {
  /** Where to register; default prom-client's global `register`. */
  readonly registry?: PromRegistryLike;
  /** The prom-client module; default `await import('prom-client')`. */
  readonly client?: unknown;
  /** Step duration histogram buckets, in seconds (default the jobs' buckets). */
  readonly buckets?: readonly number[];
}

/**
 * A {@link WorkflowMetrics} backed by prom-client (an optional peer): counters
 * `alkstore_workflow_runs_started_total`, `alkstore_workflow_runs_completed_total`,
 * `alkstore_workflow_runs_failed_total`, `alkstore_workflow_runs_cancelled_total` (label `workflow`)
 * and the histogram `alkstore_workflow_step_duration_seconds` (labels `workflow`, `step`, `outcome`), and the
 * gauge `alkstore_workflow_unserved_runs` (labels `workflow`, `version`): running runs no definition serves.
 * Calling it twice on one registry reuses the registered metrics.
 */
export async function createPrometheusWorkflowMetrics(
  options: PrometheusWorkflowMetricsOptions = {},
): Promise<WorkflowMetrics> {
  const get = await promMetricGetter('createPrometheusWorkflowMetrics', options.client, options.registry);
  const w = ['workflow'];
  const started = get<CounterLike>('Counter', 'alkstore_workflow_runs_started_total', 'Workflow runs started', w);
  const completed = get<CounterLike>(
    'Counter',
    'alkstore_workflow_runs_completed_total',
    'Workflow runs that completed',
    w,
  );
  const failed = get<CounterLike>('Counter', 'alkstore_workflow_runs_failed_total', 'Workflow runs that failed', w);
  const cancelled = get<CounterLike>('Counter', 'alkstore_workflow_runs_cancelled_total', 'Workflow runs cancelled', w);
  const duration = get<HistogramLike>(
    'Histogram',
    'alkstore_workflow_step_duration_seconds',
    'Duration of workflow step attempts',
    ['workflow', 'step', 'outcome'],
    {
      buckets: [...(options.buckets ?? DEFAULT_DURATION_BUCKETS)],
    },
  );
  const unserved = get<GaugeLike>(
    'Gauge',
    'alkstore_workflow_unserved_runs',
    'Running workflow runs pinned to a version no definition serves',
    ['workflow', 'version'],
  );
  return {
    unservedRuns: (workflow, version, runs) => unserved.set({ workflow, version: String(version) }, runs),
    started: (workflow) => started.inc({ workflow }),
    completed: (workflow) => completed.inc({ workflow }),
    failed: (workflow) => failed.inc({ workflow }),
    cancelled: (workflow) => cancelled.inc({ workflow }),
    stepDuration: (workflow, step, outcome, ms) => duration.observe({ workflow, step, outcome }, ms / 1000),
  };
}

/** The trace of run `runId` of namespace `ns`: the same ids in every process and on every pass. */
export function runTraceIds(ns: string, runId: string): { traceId: string; spanId: string } {
  const h = createHash('sha256').update(`${ns}\u0000${runId}`).digest('hex');
  return { traceId: h.slice(0, 32), spanId: h.slice(32, 48) };
}

/** Most runs whose trace ids {@link Instrument} keeps at once. */
const TRACE_IDS_KEPT = 1024;

/** Metrics and spans of the workflows' steps. */
export class Instrument {
  private readonly loading: Promise<typeof OtelApi | null> | null;

  constructor(
    private readonly ns: string,
    private readonly metrics: WorkflowMetrics | null,
    tracing: boolean,
  ) {
    this.loading = tracing ? loadOtelApi() : null;
  }

  /** The trace ids of the runs whose steps ran lately (a run's steps reuse its hash), bounded. */
  private readonly traces = new Map<string, { traceId: string; spanId: string }>();

  private traceIds(runId: string): { traceId: string; spanId: string } {
    let ids = this.traces.get(runId);
    if (ids === undefined) {
      if (this.traces.size >= TRACE_IDS_KEPT) this.traces.clear();
      ids = runTraceIds(this.ns, runId);
      this.traces.set(runId, ids);
    }
    return ids;
  }

  /** Reports to the metrics sink, ignoring its throws. */
  unserved(workflow: string, version: number, runs: number): void {
    try {
      this.metrics?.unservedRuns?.(workflow, version, runs);
    } catch {
      // A metrics sink never fails a run.
    }
  }

  count(what: 'started' | 'completed' | 'failed' | 'cancelled', workflow: string): void {
    try {
      this.metrics?.[what](workflow);
    } catch {
      // A metrics sink never fails a run.
    }
  }

  /**
   * Runs one attempt of a step: timed for `stepDuration`, and (with `@opentelemetry/api`) in an INTERNAL
   * span `<workflow> <step>` of the run's trace (trace id derived from the run, so every pass and every
   * process adds to one trace).
   */
  async step<T>(
    workflow: string,
    runId: string,
    kind: string,
    name: string,
    attempt: number,
    fn: () => Promise<T>,
  ): Promise<T> {
    const t0 = performance.now();
    const api = this.loading ? await this.loading : null;
    let span: OtelApi.Span | null = null;
    let run = fn;
    if (api) {
      const ids = this.traceIds(runId);
      const parent = api.trace.setSpanContext(api.context.active(), {
        traceId: ids.traceId,
        spanId: ids.spanId,
        traceFlags: api.TraceFlags.SAMPLED,
        isRemote: true,
      });
      span = api.trace.getTracer('alkstore').startSpan(
        `${workflow} ${name}`,
        {
          kind: api.SpanKind.INTERNAL,
          attributes: {
            'alkstore.workflow': workflow,
            'alkstore.workflow.run_id': runId,
            'alkstore.workflow.step': name,
            'alkstore.workflow.step_kind': kind,
            'alkstore.workflow.attempt': attempt,
          },
        },
        parent,
      );
      const s = span;
      run = () => api.context.with(api.trace.setSpan(parent, s), fn);
    }
    const done = (outcome: 'ok' | 'error'): void => {
      try {
        this.metrics?.stepDuration(workflow, name, outcome, performance.now() - t0);
      } catch {
        // A metrics sink never fails a step.
      }
    };
    try {
      const r = await run();
      done('ok');
      span?.end();
      return r;
    } catch (err) {
      done('error');
      if (span && api) {
        const e = (err as { error?: unknown }).error ?? err;
        span.recordException(e instanceof Error ? e : String(e));
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: e instanceof Error ? e.name : 'error' });
        span.end();
      }
      throw err;
    }
  }
}
