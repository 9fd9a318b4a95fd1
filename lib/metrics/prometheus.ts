import {
  promMetricGetter,
  type CounterLike,
  type GaugeLike,
  type HistogramLike,
  type PromRegistryLike,
} from '../internal/prom-client.js';
import type { DeadReason } from '../worker/worker-observer.js';
import type { JobMetrics, QueueDepth } from './job-metrics.js';

/** The part of a prom-client `Registry` this adapter needs. */
export type PrometheusRegistryLike = PromRegistryLike;

/** Options of {@link createPrometheusMetrics}. */
export interface PrometheusMetricsOptions {
  /** Where to register; default prom-client's global `register`. */
  registry?: PrometheusRegistryLike;
  /** The prom-client module; default `await import('prom-client')`. */
  client?: unknown;
  /** Handler duration histogram buckets, in seconds. */
  buckets?: number[];
}

/** Default buckets of `alkstore_job_duration_seconds`. */
export const DEFAULT_DURATION_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
];

/**
 * A {@link JobMetrics} backed by prom-client (an optional peer, loaded only by
 * this call; a missing package is an error naming it). Label `queue` on
 * every metric, plus `reason` on `alkstore_jobs_dead_total`:
 *
 * counters `alkstore_jobs_claimed_total`, `alkstore_jobs_completed_total`,
 * `alkstore_jobs_failed_total`, `alkstore_jobs_retried_total`,
 * `alkstore_jobs_dead_total{reason}`, `alkstore_jobs_lease_lost_total`;
 * histogram `alkstore_job_duration_seconds`; gauges
 * `alkstore_queue_pending_jobs`, `alkstore_queue_processing_jobs`,
 * `alkstore_queue_dead_jobs`, `alkstore_queue_oldest_ready_age_seconds`.
 *
 * Calling it twice on one registry reuses the registered metrics.
 */
export async function createPrometheusMetrics(options: PrometheusMetricsOptions = {}): Promise<JobMetrics> {
  const get = await promMetricGetter('createPrometheusMetrics', options.client, options.registry);
  const q = ['queue'];
  const claimed = get<CounterLike>('Counter', 'alkstore_jobs_claimed_total', 'Jobs claimed by a worker', q);
  const completed = get<CounterLike>('Counter', 'alkstore_jobs_completed_total', 'Jobs whose handler succeeded', q);
  const failed = get<CounterLike>('Counter', 'alkstore_jobs_failed_total', 'Handler calls that threw or timed out', q);
  const retried = get<CounterLike>('Counter', 'alkstore_jobs_retried_total', 'Failed jobs put back with a backoff', q);
  const dead = get<CounterLike>('Counter', 'alkstore_jobs_dead_total', 'Jobs dead-lettered by a worker', [
    'queue',
    'reason',
  ]);
  const leaseLost = get<CounterLike>(
    'Counter',
    'alkstore_jobs_lease_lost_total',
    'Claims a worker lost before writing the outcome',
    q,
  );
  const duration = get<HistogramLike>('Histogram', 'alkstore_job_duration_seconds', 'Duration of handler calls', q, {
    buckets: [...(options.buckets ?? DEFAULT_DURATION_BUCKETS)],
  });
  const pending = get<GaugeLike>('Gauge', 'alkstore_queue_pending_jobs', 'Jobs waiting to be claimed (sampled)', q);
  const processing = get<GaugeLike>(
    'Gauge',
    'alkstore_queue_processing_jobs',
    'Jobs claimed and not finished (sampled)',
    q,
  );
  const deadJobs = get<GaugeLike>('Gauge', 'alkstore_queue_dead_jobs', 'Dead letters kept (sampled)', q);
  const oldest = get<GaugeLike>(
    'Gauge',
    'alkstore_queue_oldest_ready_age_seconds',
    'Age of the oldest ready job (sampled)',
    q,
  );
  return {
    claimed: (queue, count) => claimed.inc({ queue }, count),
    completed: (queue) => completed.inc({ queue }),
    failed: (queue) => failed.inc({ queue }),
    retried: (queue) => retried.inc({ queue }),
    dead: (queue, reason: DeadReason) => dead.inc({ queue, reason }),
    leaseLost: (queue) => leaseLost.inc({ queue }),
    handlerDuration: (queue, ms) => duration.observe({ queue }, ms / 1000),
    depth: (queue, d: QueueDepth) => {
      pending.set({ queue }, d.pending);
      processing.set({ queue }, d.processing);
      deadJobs.set({ queue }, d.dead);
    },
    oldestReadyAge: (queue, ms) => oldest.set({ queue }, ms / 1000),
  };
}
