import {
  promMetricGetter,
  type CounterLike,
  type GaugeLike,
  type HistogramLike,
  type PromRegistryLike,
} from '../internal/prom-client.js';
import type { AbandonReason, OutboxMetrics, PublishResult, RetryReason } from './outbox-metrics.js';
import type { DeadReason } from './retry-policy.js';

/** Options of {@link createPromMetrics}. */
export interface PromMetricsOptions {
  /** The prom-client module to use; default `await import('prom-client')`. */
  client?: unknown;
  /** Metric name prefix, default `alkstore_outbox_`. */
  prefix?: string;
  /** Publish duration histogram buckets in seconds. */
  buckets?: number[];
}

/**
 * An {@link OutboxMetrics} backed by prom-client, registered on `registry`.
 * prom-client is an optional dependency, loaded only by this call (a missing
 * package is an error naming it). Metrics (labels `outbox`, plus `reason` or `result`):
 * `<prefix>claimed_total`, `<prefix>published_total`, `<prefix>retried_total{reason}`,
 * `<prefix>dead_total{reason}`, `<prefix>abandoned_total{reason}`, `<prefix>broker_duplicates_total`,
 * `<prefix>late_confirms_total`,
 * `<prefix>publish_duration_seconds{result}` (histogram), `<prefix>pending`,
 * `<prefix>oldest_pending_age_seconds` (gauges). Calling it twice on one
 * registry reuses the registered metrics, so one instance may serve many outboxes.
 */
export async function createPromMetrics(
  registry: PromRegistryLike,
  options: PromMetricsOptions = {},
): Promise<OutboxMetrics> {
  const prefix = options.prefix ?? 'alkstore_outbox_';
  const getNamed = await promMetricGetter('createPromMetrics', options.client, registry);
  const get = <T>(
    kind: 'Counter' | 'Gauge' | 'Histogram',
    suffix: string,
    help: string,
    labelNames: string[],
    extra: { buckets?: number[] } = {},
  ): T => getNamed<T>(kind, `${prefix}${suffix}`, help, labelNames, extra);
  const claimed = get<CounterLike>('Counter', 'claimed_total', 'Outbox rows claimed by a dispatcher', ['outbox']);
  const published = get<CounterLike>('Counter', 'published_total', 'Outbox deliveries that succeeded', ['outbox']);
  const retried = get<CounterLike>('Counter', 'retried_total', 'Outbox deliveries put back for a retry', [
    'outbox',
    'reason',
  ]);
  const dead = get<CounterLike>('Counter', 'dead_total', 'Outbox messages dead-lettered', ['outbox', 'reason']);
  const abandoned = get<CounterLike>(
    'Counter',
    'abandoned_total',
    'Outbox rows left to their lease without a recorded outcome',
    ['outbox', 'reason'],
  );
  const brokerDup = get<CounterLike>(
    'Counter',
    'broker_duplicates_total',
    'Publishes the broker answered as duplicates (absorbed by the dedup id)',
    ['outbox'],
  );
  const late = get<CounterLike>(
    'Counter',
    'late_confirms_total',
    'Publishes confirmed by the broker after they had timed out (republished: a duplicate window)',
    ['outbox'],
  );
  const duration = get<HistogramLike>(
    'Histogram',
    'publish_duration_seconds',
    'Duration of outbox delivery attempts',
    ['outbox', 'result'],
    {
      buckets: options.buckets ?? [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    },
  );
  const pending = get<GaugeLike>('Gauge', 'pending', 'Outbox rows waiting to be claimed (sampled)', ['outbox']);
  const oldest = get<GaugeLike>('Gauge', 'oldest_pending_age_seconds', 'Age of the oldest ready outbox row (sampled)', [
    'outbox',
  ]);
  return {
    claimed: (count: number, outbox: string) => claimed.inc({ outbox }, count),
    published: (_ms: number, outbox: string) => published.inc({ outbox }),
    retried: (reason: RetryReason, outbox: string) => retried.inc({ outbox, reason }),
    dead: (reason: DeadReason, outbox: string) => dead.inc({ outbox, reason }),
    abandoned: (reason: AbandonReason, outbox: string) => abandoned.inc({ outbox, reason }),
    brokerDuplicate: (outbox: string) => brokerDup.inc({ outbox }),
    lateConfirm: (outbox: string) => late.inc({ outbox }),
    publishDuration: (ms: number, result: PublishResult, outbox: string) =>
      duration.observe({ outbox, result }, ms / 1000),
    pending: (count: number, outbox: string) => pending.set({ outbox }, count),
    oldestPendingAgeMs: (ms: number, outbox: string) => oldest.set({ outbox }, ms / 1000),
  };
}

/** The part of a prom-client `Registry` this adapter needs. */
export type { PromRegistryLike };
