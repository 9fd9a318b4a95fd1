import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import * as promClient from 'prom-client';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { createPrometheusMetrics, type JobMetrics, type QueueDepth } from '../../lib/metrics/index.js';
import { AlkstoreModule, OnOutboxEvent, OnQueueEvent, OutboxHandler, QueueHandler } from '../../lib/nest/index.js';
import type { DeadReason } from '../../lib/worker/index.js';
import { waitFor } from '../helpers/engines.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';

/** A JobMetrics that counts per queue. */
class RecordingJobMetrics implements JobMetrics {
  readonly counts = new Map<string, number>();
  readonly depths = new Map<string, QueueDepth>();
  readonly ages = new Map<string, number>();
  private bump(key: string, by = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + by);
  }
  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  claimed(queue: string, count: number): void {
    this.bump(`claimed ${queue}`, count);
  }
  completed(queue: string): void {
    this.bump(`completed ${queue}`);
  }
  failed(queue: string): void {
    this.bump(`failed ${queue}`);
  }
  retried(queue: string): void {
    this.bump(`retried ${queue}`);
  }
  dead(queue: string, reason: DeadReason): void {
    this.bump(`dead ${queue} ${reason}`);
  }
  leaseLost(queue: string): void {
    this.bump(`leaseLost ${queue}`);
  }
  handlerDuration(queue: string, ms: number): void {
    if (ms >= 0) this.bump(`duration ${queue}`);
  }
  depth(queue: string, d: QueueDepth): void {
    this.depths.set(queue, d);
  }
  oldestReadyAge(queue: string, ms: number): void {
    this.ages.set(queue, ms);
  }
}

const moduleMetrics = new RecordingJobMetrics();
const ownMetrics = new RecordingJobMetrics();
const registry = new promClient.Registry();
let events: string[] = [];
let batches: number[][] = [];

@Injectable()
class ObservedWorkers {
  @QueueHandler('obs-work', { maxAttempts: 2, backoffBaseMs: 1 })
  async work(job: Job<{ kind: string }>): Promise<void> {
    if (job.payload.kind === 'permanent') throw new PermanentError('never works');
    if (job.payload.kind === 'flaky' && job.attempts === 1) throw new Error('first attempt fails');
    if (job.payload.kind === 'broken') throw new Error('always fails');
  }

  @QueueHandler('obs-own', { metrics: ownMetrics })
  async own(): Promise<void> {}

  @QueueHandler('obs-quiet', { metrics: false })
  async quiet(): Promise<void> {}

  @QueueHandler('obs-batch', { batchSize: 4, backoffBaseMs: 1 })
  async batch(jobs: Job<{ n: number }>[]): Promise<unknown[]> {
    batches.push(jobs.map((j) => j.payload.n));
    // Odd payloads fail this time (retried), 3 can never work (dead), the rest are acked.
    return jobs.map((j) =>
      j.payload.n === 3
        ? new PermanentError('three is bad')
        : j.payload.n % 2 === 1 && j.attempts === 1
          ? new Error('odd')
          : null,
    );
  }

  @OutboxHandler('obs-outbox', { metrics: false })
  async deliver(): Promise<void> {}

  @OnQueueEvent('obs-work', 'completed')
  onCompleted(job: Job<{ kind: string }>): void {
    events.push(`completed ${job.payload.kind}`);
  }

  @OnQueueEvent('obs-work', 'failed')
  onFailed(job: Job<{ kind: string }>, error: unknown): void {
    events.push(`failed ${job.payload.kind} ${(error as Error).message}`);
  }

  @OnQueueEvent('obs-work', 'retried')
  onRetried(job: Job<{ kind: string }>): void {
    events.push(`retried ${job.payload.kind}`);
  }

  @OnQueueEvent('obs-work', 'dead')
  onDead(job: Job<{ kind: string }>, _error: unknown, reason: DeadReason): void {
    events.push(`dead ${job.payload.kind} ${reason}`);
  }

  @OnQueueEvent('obs-work', 'drained')
  onDrained(): void {
    events.push('drained');
  }

  @OnOutboxEvent('obs-outbox', 'completed')
  onDelivered(job: Job<{ n: number }>): void {
    events.push(`delivered ${job.payload.n}`);
  }
}

for (const engine of nestEngines()) {
  describe(`worker metrics, events and batch handlers in the Nest module (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;
    let store: Store;
    const logger = new MemoryLogger();

    beforeAll(async () => {
      events = [];
      batches = [];
      moduleMetrics.counts.clear();
      ownMetrics.counts.clear();
      registry.clear();
      db = await engine.create();
      const prom = await createPrometheusMetrics({ registry });
      const both: JobMetrics = {
        claimed: (q, n) => (moduleMetrics.claimed(q, n), prom.claimed(q, n)),
        completed: (q) => (moduleMetrics.completed(q), prom.completed(q)),
        failed: (q) => (moduleMetrics.failed(q), prom.failed(q)),
        retried: (q) => (moduleMetrics.retried(q), prom.retried(q)),
        dead: (q, r) => (moduleMetrics.dead(q, r), prom.dead(q, r)),
        leaseLost: (q) => (moduleMetrics.leaseLost(q), prom.leaseLost(q)),
        handlerDuration: (q, ms) => (moduleMetrics.handlerDuration(q, ms), prom.handlerDuration(q, ms)),
        depth: (q, d) => (moduleMetrics.depth(q, d), prom.depth(q, d)),
        oldestReadyAge: (q, ms) => (moduleMetrics.oldestReadyAge(q, ms), prom.oldestReadyAge(q, ms)),
      };
      app = await Test.createTestingModule({
        imports: [
          AlkstoreModule.forRoot(
            db.moduleOptions({ logger, idlePollIntervalMs: 100, metrics: both, metricsIntervalMs: 50 }),
          ),
        ],
        providers: [ObservedWorkers],
      }).compile();
      await app.init();
      store = app.get(Store);
    });

    afterAll(async () => {
      await app?.close();
      await db?.destroy();
    });

    it('reports claimed, completed, failed, retried, dead (with reason), handler durations and sampled depth for a @QueueHandler', async () => {
      const q = store.queue('obs-work');
      await q.enqueueMany([{ kind: 'ok' }, { kind: 'flaky' }, { kind: 'permanent' }, { kind: 'broken' }]);
      await waitFor('every job settled', async () => {
        const s = await q.stats();
        return s.pending === 0 && s.processing === 0 && s.dead === 2;
      });
      const m = moduleMetrics;
      await waitFor(
        'the outcomes were counted',
        () =>
          m.get('dead obs-work exhausted') === 1 &&
          m.get('dead obs-work permanent') === 1 &&
          m.get('completed obs-work') === 2,
      );
      expect(m.get('claimed obs-work')).toBe(6);
      expect(m.get('failed obs-work')).toBe(4);
      expect(m.get('retried obs-work')).toBe(2);
      expect(m.get('duration obs-work')).toBe(6);
      await waitFor(
        'a depth sample shows the two dead letters',
        () => m.depths.get('obs-work')?.dead === 2 && m.depths.get('obs-work')?.pending === 0,
      );
      expect(m.ages.get('obs-work')).toBe(0);
    });

    it('exports them through prom-client under standard names, labelled by queue (and reason) only', async () => {
      await waitFor('prometheus saw the dead letters', async () =>
        (await registry.metrics()).includes('alkstore_jobs_dead_total{queue="obs-work",reason="exhausted"} 1'),
      );
      const text = await registry.metrics();
      expect(text).toContain('alkstore_jobs_completed_total{queue="obs-work"} 2');
      expect(text).toContain('alkstore_jobs_dead_total{queue="obs-work",reason="permanent"} 1');
      expect(text).toContain('alkstore_jobs_retried_total{queue="obs-work"} 2');
      expect(text).toContain('alkstore_queue_dead_jobs{queue="obs-work"} 2');
      expect(text).toMatch(/alkstore_job_duration_seconds_count\{queue="obs-work"\} 6/);
      const labelNames = new Set([...text.matchAll(/[{,]([a-z_]+)="/g)].map((mm) => mm[1]));
      expect([...labelNames].sort()).toEqual(['le', 'queue', 'reason']);
      expect(text).not.toMatch(/always fails|never works/);
    });

    it('calls @OnQueueEvent listeners for completed, failed, retried, dead and drained, and @OnOutboxEvent for the dispatcher', async () => {
      // 'drained' follows the first empty claim after the work, which may come a poll interval after the last dead event.
      await waitFor(
        'the dead and drained events arrived',
        () =>
          events.includes('dead broken exhausted') &&
          events.includes('dead permanent permanent') &&
          events.includes('drained'),
      );
      expect(events).toEqual(
        expect.arrayContaining([
          'completed ok',
          'completed flaky',
          'failed flaky first attempt fails',
          'retried flaky',
          'failed permanent never works',
          'drained',
        ]),
      );
      expect(events.filter((e) => e === 'retried broken')).toHaveLength(1);
      const before = events.length;
      await store.outboxEnqueue('obs-outbox', { n: 7 });
      await waitFor('the outbox delivery event', () => events.includes('delivered 7'));
      expect(events.length).toBeGreaterThan(before);
    });

    it('routes a handler with its own metrics there, and one with metrics: false nowhere', async () => {
      await store.queue('obs-own').enqueue(1);
      await store.queue('obs-quiet').enqueue(1);
      await waitFor(
        'both ran',
        async () =>
          (await store.queue('obs-own').stats()).pending + (await store.queue('obs-quiet').stats()).pending === 0 &&
          ownMetrics.get('completed obs-own') === 1,
      );
      await waitFor('the quiet queue is empty', async () => (await store.queue('obs-quiet').stats()).processing === 0);
      expect(moduleMetrics.get('completed obs-own')).toBe(0);
      expect(moduleMetrics.get('claimed obs-quiet')).toBe(0);
      expect(moduleMetrics.get('completed obs-quiet')).toBe(0);
      expect(moduleMetrics.get('claimed __alkstore_outbox:obs-outbox')).toBe(0);
    });

    it('hands a batch handler Job[] and applies its per-job outcomes: acks the successes, retries or dead-letters the others', async () => {
      const q = store.queue('obs-batch');
      const ids = await q.enqueueMany([1, 2, 3, 4].map((n) => ({ n })));
      await waitFor('the batch settled', async () => {
        const s = await q.stats();
        return s.pending === 0 && s.processing === 0 && s.dead === 1;
      });
      expect(batches[0]).toEqual([1, 2, 3, 4]);
      // 1 failed once and ran again alone; 3 is dead; 2 and 4 were acked the first time.
      expect(batches.slice(1).flat()).toEqual([1]);
      expect(await q.getJob(ids[1]!)).toBeNull();
      expect(await q.getJob(ids[3]!)).toBeNull();
      expect(await q.getJob(ids[2]!)).toMatchObject({ state: 'dead' });
      expect(await q.getJob(ids[0]!)).toBeNull();
    });
  });
}
