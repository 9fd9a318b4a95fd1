import { describe, expect, it } from '@jest/globals';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type DataPoint,
} from '@opentelemetry/sdk-metrics';
import * as promClient from 'prom-client';
import {
  createOpenTelemetryMetrics,
  createPrometheusMetrics,
  validateJobMetrics,
  type JobMetrics,
} from '../../lib/metrics/index.js';

function feed(m: JobMetrics): void {
  m.claimed('emails', 3);
  m.completed('emails');
  m.completed('emails');
  m.failed('emails');
  m.retried('emails');
  m.dead('emails', 'permanent');
  m.leaseLost('emails');
  m.handlerDuration('emails', 250);
  m.depth('emails', { pending: 7, processing: 2, dead: 1 });
  m.oldestReadyAge('emails', 1500);
}

describe('metrics adapters', () => {
  it('Prometheus: standard names, the queue label (and reason on dead) only, reusing metrics registered before', async () => {
    const registry = new promClient.Registry();
    feed(await createPrometheusMetrics({ registry }));
    // A second adapter on the same registry shares the metrics instead of failing on duplicate names.
    (await createPrometheusMetrics({ registry })).completed('emails');
    const text = await registry.metrics();
    expect(text).toContain('alkstore_jobs_claimed_total{queue="emails"} 3');
    expect(text).toContain('alkstore_jobs_completed_total{queue="emails"} 3');
    expect(text).toContain('alkstore_jobs_failed_total{queue="emails"} 1');
    expect(text).toContain('alkstore_jobs_retried_total{queue="emails"} 1');
    expect(text).toContain('alkstore_jobs_dead_total{queue="emails",reason="permanent"} 1');
    expect(text).toContain('alkstore_jobs_lease_lost_total{queue="emails"} 1');
    expect(text).toContain('alkstore_job_duration_seconds_sum{queue="emails"} 0.25');
    expect(text).toContain('alkstore_queue_pending_jobs{queue="emails"} 7');
    expect(text).toContain('alkstore_queue_processing_jobs{queue="emails"} 2');
    expect(text).toContain('alkstore_queue_dead_jobs{queue="emails"} 1');
    expect(text).toContain('alkstore_queue_oldest_ready_age_seconds{queue="emails"} 1.5');
  });

  it('OpenTelemetry: counters, a duration histogram and observable depth gauges on the given meter', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const provider = new MeterProvider({ readers: [reader] });
    try {
      feed(await createOpenTelemetryMetrics({ meter: provider.getMeter('test') }));
      const { resourceMetrics } = await reader.collect();
      const points = new Map<string, DataPoint<unknown>[]>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics)
          points.set(metric.descriptor.name, metric.dataPoints as DataPoint<unknown>[]);
      const one = (name: string): DataPoint<unknown> => {
        const p = points.get(name);
        expect(p).toHaveLength(1);
        return p![0]!;
      };
      expect(one('alkstore.jobs.claimed')).toMatchObject({ value: 3, attributes: { queue: 'emails' } });
      expect(one('alkstore.jobs.completed').value).toBe(2);
      expect(one('alkstore.jobs.dead')).toMatchObject({
        value: 1,
        attributes: { queue: 'emails', reason: 'permanent' },
      });
      expect(one('alkstore.jobs.lease_lost').value).toBe(1);
      expect(one('alkstore.job.duration').value).toMatchObject({ count: 1, sum: 0.25 });
      expect(one('alkstore.queue.pending')).toMatchObject({ value: 7, attributes: { queue: 'emails' } });
      expect(one('alkstore.queue.dead').value).toBe(1);
      expect(one('alkstore.queue.oldest_ready_age').value).toBe(1.5);
    } finally {
      await provider.shutdown();
    }
  });

  it('refuses a metrics object that does not implement JobMetrics, naming the missing method', () => {
    expect(() => validateJobMetrics('metrics', {})).toThrow(/metrics.*claimed is not a function/);
    expect(() => validateJobMetrics('metrics', null)).toThrow(/metrics/);
  });
});
