import { loadPeer } from '../internal/load-peer.js';
import type { JobMetrics, QueueDepth } from './job-metrics.js';

// @opentelemetry/api stays optional: structural stand-ins for the parts used here.

type Attributes = Record<string, string>;
interface CounterLike {
  add(value: number, attributes?: Attributes): void;
}
interface HistogramLike {
  record(value: number, attributes?: Attributes): void;
}
interface ObservableResultLike {
  observe(value: number, attributes?: Attributes): void;
}
interface ObservableGaugeLike {
  addCallback(cb: (result: ObservableResultLike) => void): void;
}
interface InstrumentOptions {
  description?: string;
  unit?: string;
}
/** The part of an OpenTelemetry `Meter` this adapter needs. */
export interface MeterLike {
  createCounter(name: string, options?: InstrumentOptions): CounterLike;
  createHistogram(name: string, options?: InstrumentOptions): HistogramLike;
  createObservableGauge(name: string, options?: InstrumentOptions): ObservableGaugeLike;
}
interface OtelApiLike {
  metrics: { getMeter(name: string, version?: string): MeterLike };
}

/** Options of {@link createOpenTelemetryMetrics}. */
export interface OpenTelemetryMetricsOptions {
  /** The meter to record on; default `metrics.getMeter('alkstore')` of `@opentelemetry/api` (the global MeterProvider). */
  meter?: MeterLike;
}

/**
 * A {@link JobMetrics} recording on an OpenTelemetry meter
 * (`@opentelemetry/api`, an optional peer loaded only by this call). Attribute
 * `queue` on every instrument, plus `reason` on `alkstore.jobs.dead`:
 *
 * counters `alkstore.jobs.claimed`, `alkstore.jobs.completed`,
 * `alkstore.jobs.failed`, `alkstore.jobs.retried`, `alkstore.jobs.dead`,
 * `alkstore.jobs.lease_lost`; histogram `alkstore.job.duration` (seconds);
 * observable gauges `alkstore.queue.pending`, `alkstore.queue.processing`,
 * `alkstore.queue.dead`, `alkstore.queue.oldest_ready_age` (seconds), which
 * report the last sample of each queue.
 */
export async function createOpenTelemetryMetrics(options: OpenTelemetryMetricsOptions = {}): Promise<JobMetrics> {
  let meter = options.meter;
  if (!meter) {
    const api = (await loadPeer('@opentelemetry/api', () => import('@opentelemetry/api'))) as unknown as OtelApiLike;
    meter = api.metrics.getMeter('alkstore');
  }
  const counter = (name: string, description: string): CounterLike =>
    meter.createCounter(name, { description, unit: '{job}' });
  const claimed = counter('alkstore.jobs.claimed', 'Jobs claimed by a worker');
  const completed = counter('alkstore.jobs.completed', 'Jobs whose handler succeeded');
  const failed = counter('alkstore.jobs.failed', 'Handler calls that threw or timed out');
  const retried = counter('alkstore.jobs.retried', 'Failed jobs put back with a backoff');
  const dead = counter('alkstore.jobs.dead', 'Jobs dead-lettered by a worker');
  const leaseLost = counter('alkstore.jobs.lease_lost', 'Claims a worker lost before writing the outcome');
  const duration = meter.createHistogram('alkstore.job.duration', {
    description: 'Duration of handler calls',
    unit: 's',
  });
  const depths = new Map<string, QueueDepth>();
  const ages = new Map<string, number>();
  const gauge = (
    name: string,
    description: string,
    unit: string,
    read: (queue: string) => number | undefined,
  ): void => {
    meter.createObservableGauge(name, { description, unit }).addCallback((result) => {
      for (const queue of new Set([...depths.keys(), ...ages.keys()])) {
        const v = read(queue);
        if (v !== undefined) result.observe(v, { queue });
      }
    });
  };
  gauge('alkstore.queue.pending', 'Jobs waiting to be claimed (sampled)', '{job}', (q) => depths.get(q)?.pending);
  gauge(
    'alkstore.queue.processing',
    'Jobs claimed and not finished (sampled)',
    '{job}',
    (q) => depths.get(q)?.processing,
  );
  gauge('alkstore.queue.dead', 'Dead letters kept (sampled)', '{job}', (q) => depths.get(q)?.dead);
  gauge('alkstore.queue.oldest_ready_age', 'Age of the oldest ready job (sampled)', 's', (q) => {
    const ms = ages.get(q);
    return ms === undefined ? undefined : ms / 1000;
  });
  return {
    claimed: (queue, count) => claimed.add(count, { queue }),
    completed: (queue) => completed.add(1, { queue }),
    failed: (queue) => failed.add(1, { queue }),
    retried: (queue) => retried.add(1, { queue }),
    dead: (queue, reason) => dead.add(1, { queue, reason }),
    leaseLost: (queue) => leaseLost.add(1, { queue }),
    handlerDuration: (queue, ms) => duration.record(ms / 1000, { queue }),
    depth: (queue, d) => void depths.set(queue, { pending: d.pending, processing: d.processing, dead: d.dead }),
    oldestReadyAge: (queue, ms) => void ages.set(queue, ms),
  };
}
