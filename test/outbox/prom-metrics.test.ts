import { describe, expect, it } from '@jest/globals';
import * as promClient from 'prom-client';
import { createPromMetrics } from '../../lib/outbox/index.js';

describe('createPromMetrics', () => {
  it('loads prom-client on demand and exposes counters, gauges and a histogram labelled by outbox and reason only', async () => {
    const registry = new promClient.Registry();
    const m = await createPromMetrics(registry);
    m.claimed(3, 'orders');
    m.published(12, 'orders');
    m.publishDuration(12, 'ok', 'orders');
    m.publishDuration(1500, 'timeout', 'orders');
    m.retried('timeout', 'orders');
    m.dead('permanent', 'orders');
    m.abandoned?.('drain', 'orders');
    m.pending(7, 'orders');
    m.oldestPendingAgeMs(2500, 'orders');
    const text = await registry.metrics();
    expect(text).toContain('alkstore_outbox_claimed_total{outbox="orders"} 3');
    expect(text).toContain('alkstore_outbox_published_total{outbox="orders"} 1');
    expect(text).toContain('alkstore_outbox_retried_total{outbox="orders",reason="timeout"} 1');
    expect(text).toContain('alkstore_outbox_dead_total{outbox="orders",reason="permanent"} 1');
    expect(text).toContain('alkstore_outbox_abandoned_total{outbox="orders",reason="drain"} 1');
    expect(text).toContain('alkstore_outbox_pending{outbox="orders"} 7');
    expect(text).toContain('alkstore_outbox_oldest_pending_age_seconds{outbox="orders"} 2.5');
    expect(text).toContain('alkstore_outbox_publish_duration_seconds_count{outbox="orders",result="timeout"} 1');
    // Only the documented label names ever appear.
    const labelNames = new Set([...text.matchAll(/[{,]([a-z_]+)="/g)].map((x) => x[1]));
    expect([...labelNames].sort()).toEqual(['le', 'outbox', 'reason', 'result']);
  });

  it('reuses the metrics already registered, so several outboxes can share a registry', async () => {
    const registry = new promClient.Registry();
    const a = await createPromMetrics(registry);
    const b = await createPromMetrics(registry, { client: promClient });
    a.claimed(1, 'a');
    b.claimed(2, 'b');
    const text = await registry.metrics();
    expect(text).toContain('alkstore_outbox_claimed_total{outbox="a"} 1');
    expect(text).toContain('alkstore_outbox_claimed_total{outbox="b"} 2');
  });

  it('refuses a client module without the metric classes', async () => {
    await expect(createPromMetrics(new promClient.Registry(), { client: {} })).rejects.toThrow(
      /Counter, Gauge and Histogram/,
    );
  });
});
