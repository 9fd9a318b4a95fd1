import { describe, expect, it } from '@jest/globals';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Job, Store } from '../../lib/contract/types.js';
import { OutboxDispatcher, PublishTimeout } from '../../lib/outbox/index.js';
import { contractEngines, withEngineDb, waitFor, type EngineDb } from '../helpers/engines.js';
import { faultyStore, MemoryLogger, RecordingMetrics, startDispatcher } from './outbox-fixtures.js';

interface Msg {
  n: number;
}

for (const engine of contractEngines()) {
  describe(`outbox dispatcher delivery (${engine.name})`, () => {
    let db!: EngineDb;
    let store!: Store;
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });

    async function drained(outbox: string): Promise<boolean> {
      const s = await store.outbox(outbox).queue.stats();
      return s.pending === 0 && s.processing === 0;
    }

    it('delivers every committed message once and acks it', async () => {
      const outbox = 'deliver-all';
      await store.withTx(async (tx) => {
        for (let n = 0; n < 10; n++) await tx.outboxEnqueue(outbox, { n });
      });
      const rolledBack = store.withTx(async (tx) => {
        await tx.outboxEnqueue(outbox, { n: -1 });
        throw new Error('rollback');
      });
      await expect(rolledBack).rejects.toThrow('rollback');
      for (let n = 10; n < 20; n++) await store.outboxEnqueue(outbox, { n });
      const seen: number[] = [];
      const r = startDispatcher({ store, outbox, handler: (job) => void seen.push(job.payloadAs<Msg>().n) });
      try {
        await waitFor('all 20 messages delivered and acked', async () => seen.length >= 20 && (await drained(outbox)));
      } finally {
        await r.stop();
      }
      expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect((await store.outbox(outbox).queue.stats()).dead).toBe(0);
    });

    it('two dispatchers on two stores over one database deliver every message, with no duplicates when healthy', async () => {
      const outbox = 'two-workers';
      const other = await db.open();
      const total = 150;
      await store.outbox(outbox).queue.enqueueMany(Array.from({ length: total }, (_, n) => ({ n })));
      const deliveries = new Map<number, number>();
      const byWorker = { a: 0, b: 0 };
      const handler = (w: 'a' | 'b') => async (job: Job) => {
        const { n } = job.payloadAs<Msg>();
        deliveries.set(n, (deliveries.get(n) ?? 0) + 1);
        byWorker[w] += 1;
        await new Promise((r) => setTimeout(r, 2));
      };
      const a = startDispatcher({
        store,
        outbox,
        handler: handler('a'),
        workerId: 'a',
        settings: { claimSize: 4, concurrency: 4 },
      });
      const b = startDispatcher({
        store: other,
        outbox,
        handler: handler('b'),
        workerId: 'b',
        settings: { claimSize: 4, concurrency: 4 },
      });
      try {
        await waitFor(
          'every message delivered and acked',
          async () => deliveries.size === total && (await drained(outbox)),
          30_000,
        );
      } finally {
        await Promise.all([a.stop(), b.stop()]);
      }
      const duplicates = [...deliveries.values()].filter((c) => c > 1).length;
      expect(duplicates).toBe(0);
      expect(byWorker.a + byWorker.b).toBe(total);
    });

    it('is woken at once by a commit while idle, well before its idle poll', async () => {
      const outbox = 'wake';
      const seen: number[] = [];
      const r = startDispatcher({
        store,
        outbox,
        handler: (job) => void seen.push(job.payloadAs<Msg>().n),
        settings: { idlePollIntervalMs: 600_000, busyPollIntervalMs: 20 },
      });
      try {
        await store.outboxEnqueue(outbox, { n: 1 });
        await waitFor('first message', () => seen.length === 1, 8_000);
        // Now idle (the follow-up claim found nothing); only a wake can bring the next one in time.
        await store.withTx((tx) => tx.outboxEnqueue(outbox, { n: 2 }));
        await waitFor('second message, delivered on the commit wake', () => seen.length === 2, 8_000);
      } finally {
        await r.stop();
      }
      expect(seen).toEqual([1, 2]);
    });

    it('treats a publish timeout as transient: aborts the handler signal, retries with lastError, then delivers', async () => {
      const outbox = 'timeout';
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const reasons: unknown[] = [];
      const secondAttempt: { attempts: number; lastError: string | null }[] = [];
      const metrics = new RecordingMetrics();
      const r = startDispatcher({
        store,
        outbox,
        metrics,
        settings: { publishTimeoutMs: 300 },
        handler: async (job, signal) => {
          if (job.attempts === 1) {
            await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
            reasons.push(signal.reason);
            return;
          }
          const info = await store.outbox(outbox).queue.getJob(job.id);
          secondAttempt.push({ attempts: job.attempts, lastError: info?.lastError ?? null });
        },
      });
      try {
        await waitFor(
          'the retry delivered and acked',
          async () => secondAttempt.length === 1 && (await store.outbox(outbox).queue.getJob(id)) === null,
        );
      } finally {
        await r.stop();
      }
      expect(reasons).toHaveLength(1);
      expect(reasons[0]).toBeInstanceOf(PublishTimeout);
      expect(secondAttempt[0]!.attempts).toBe(2);
      expect(secondAttempt[0]!.lastError).toMatch(/publish timed out after 300 ms/);
      expect(metrics.retriedBy).toEqual({ error: 0, timeout: 1 });
      expect(metrics.publishedCount).toBe(1);
    });

    it('retries a thrown error with its text as lastError', async () => {
      const outbox = 'transient';
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const lastErrors: (string | null)[] = [];
      const r = startDispatcher({
        store,
        outbox,
        handler: async (job) => {
          if (job.attempts === 1) throw new Error('broker unavailable');
          lastErrors.push((await store.outbox(outbox).queue.getJob(job.id))?.lastError ?? null);
        },
      });
      try {
        await waitFor(
          'delivered on the second attempt',
          async () => lastErrors.length === 1 && (await store.outbox(outbox).queue.getJob(id)) === null,
        );
      } finally {
        await r.stop();
      }
      expect(lastErrors).toEqual(['broker unavailable']);
    });

    it('dead-letters a PermanentError at once, with the reason in lastError', async () => {
      const outbox = 'permanent';
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      let calls = 0;
      const metrics = new RecordingMetrics();
      const r = startDispatcher({
        store,
        outbox,
        metrics,
        handler: () => {
          calls += 1;
          throw new PermanentError('schema mismatch');
        },
      });
      let info;
      try {
        info = await waitFor('the message dead', async () => {
          const j = await store.outbox(outbox).queue.getJob(id);
          return j?.state === 'dead' ? j : null;
        });
      } finally {
        await r.stop();
      }
      expect(calls).toBe(1);
      expect(info.attempts).toBe(1);
      expect(info.lastError).toBe('permanent: schema mismatch');
      expect(info.diedAt).not.toBeNull();
      expect(metrics.deadBy).toEqual({ permanent: 1, exhausted: 0 });
      expect(metrics.retriedBy).toEqual({ error: 0, timeout: 0 });
    });

    it('dead-letters as exhausted after retry.maxAttempts failed attempts', async () => {
      const outbox = 'exhausted';
      const id = await store.outboxEnqueue(outbox, { n: 1 }, { maxAttempts: 10 });
      let calls = 0;
      const metrics = new RecordingMetrics();
      const r = startDispatcher({
        store,
        outbox,
        metrics,
        settings: { retry: { maxAttempts: 3, baseMs: 20, maxDelayMs: 50, jitter: 0 } },
        handler: () => {
          calls += 1;
          throw new Error('boom');
        },
      });
      let info;
      try {
        info = await waitFor('the message dead', async () => {
          const j = await store.outbox(outbox).queue.getJob(id);
          return j?.state === 'dead' ? j : null;
        });
      } finally {
        await r.stop();
      }
      expect(calls).toBe(3);
      expect(info.attempts).toBe(3);
      expect(info.lastError).toBe('exhausted after 3 attempts: boom');
      expect(metrics.retriedBy.error).toBe(2);
      expect(metrics.deadBy).toEqual({ permanent: 0, exhausted: 1 });
    });

    it("lets a message's own lower maxAttempts cap the retries", async () => {
      const outbox = 'row-cap';
      const id = await store.outboxEnqueue(outbox, { n: 1 }, { maxAttempts: 2 });
      let calls = 0;
      const r = startDispatcher({
        store,
        outbox,
        settings: { retry: { maxAttempts: 5, baseMs: 20, maxDelayMs: 50, jitter: 0 } },
        handler: () => {
          calls += 1;
          throw new Error('nope');
        },
      });
      let info;
      try {
        info = await waitFor('the message dead', async () => {
          const j = await store.outbox(outbox).queue.getJob(id);
          return j?.state === 'dead' ? j : null;
        });
      } finally {
        await r.stop();
      }
      expect(calls).toBe(2);
      expect(info.lastError).toBe('exhausted after 2 attempts: nope');
    });

    it('reports metrics that match what happened, labelled only by outbox name and reason', async () => {
      const outbox = 'metrics';
      const q = store.outbox(outbox).queue;
      const kinds = ['ok', 'ok', 'ok', 'permanent', 'fail-once', 'timeout-once'] as const;
      await q.enqueueMany(kinds.map((kind) => ({ kind })));
      const metrics = new RecordingMetrics();
      let finished = 0;
      const r = startDispatcher({
        store,
        outbox,
        metrics,
        settings: { publishTimeoutMs: 300 },
        handler: async (job, signal) => {
          const { kind } = job.payloadAs<{ kind: (typeof kinds)[number] }>();
          try {
            if (kind === 'permanent') throw new PermanentError('bad');
            if (kind === 'fail-once' && job.attempts === 1) throw new Error('flaky');
            if (kind === 'timeout-once' && job.attempts === 1) {
              await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
            }
          } finally {
            finished += 1;
          }
        },
      });
      try {
        await waitFor('every message settled', async () => {
          const s = await q.stats();
          return finished === 8 && s.pending === 0 && s.processing === 0 && s.dead === 1;
        });
        await waitFor(
          'the pending gauge sampled at 0',
          () => metrics.lastPending === 0 && metrics.lastOldestAgeMs === 0,
        );
      } finally {
        await r.stop();
      }
      expect(metrics.claimedRows).toBe(8);
      expect(metrics.publishedCount).toBe(5);
      expect(metrics.retriedBy).toEqual({ error: 1, timeout: 1 });
      expect(metrics.deadBy).toEqual({ permanent: 1, exhausted: 0 });
      expect(metrics.durations).toEqual({ ok: 5, error: 1, timeout: 1, permanent: 1 });
      expect(metrics.abandonedBy).toEqual({ 'lease-lost': 0, 'outcome-write': 0, drain: 0 });
      expect([...metrics.outboxes]).toEqual([outbox]);
    });

    it('backs off on store errors without crashing, and delivers once the store answers again', async () => {
      const outbox = 'store-errors';
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      let failures = 0;
      const flaky = faultyStore(store, {
        beforeClaim: () => {
          if (failures < 4) {
            failures += 1;
            throw new Error('connection reset');
          }
        },
      });
      const logger = new MemoryLogger();
      const seen: number[] = [];
      const r = startDispatcher({ store: flaky, outbox, logger, handler: (job) => void seen.push(job.id) });
      try {
        await waitFor(
          'delivered after the outage',
          async () => seen.length === 1 && (await store.outbox(outbox).queue.getJob(id)) === null,
        );
      } finally {
        await r.stop();
      }
      expect(failures).toBe(4);
      expect(seen).toEqual([id]);
      expect(logger.lines.filter((l) => l.startsWith('warn') && l.includes('connection reset'))).toHaveLength(4);
    });

    it('ends run() when its store is closed underneath it', async () => {
      const own = await db.open();
      const d = new OutboxDispatcher({
        store: own,
        outbox: 'closing',
        handler: () => undefined,
        logger: new MemoryLogger(),
        settings: { idlePollIntervalMs: 50, busyPollIntervalMs: 20 },
      });
      const controller = new AbortController();
      const done = d.run(controller.signal);
      await own.close();
      await expect(done).resolves.toBeUndefined();
      controller.abort();
    });

    it('never holds more than concurrency rows nor claims more than claimSize at once', async () => {
      const outbox = 'bounded';
      await store.outbox(outbox).queue.enqueueMany(Array.from({ length: 40 }, (_, n) => ({ n })));
      let running = 0;
      let maxRunning = 0;
      let delivered = 0;
      const claimSizes: number[] = [];
      const metrics = new RecordingMetrics();
      const original = metrics.claimed.bind(metrics);
      metrics.claimed = (count: number, name: string) => {
        claimSizes.push(count);
        original(count, name);
      };
      const r = startDispatcher({
        store,
        outbox,
        metrics,
        settings: { claimSize: 3, concurrency: 5 },
        handler: async () => {
          running += 1;
          maxRunning = Math.max(maxRunning, running, r.dispatcher.inFlight);
          await new Promise((resolve) => setTimeout(resolve, 10));
          running -= 1;
          delivered += 1;
        },
      });
      try {
        await waitFor('all 40 delivered', async () => delivered === 40 && (await drained(outbox)), 20_000);
      } finally {
        await r.stop();
      }
      expect(maxRunning).toBeLessThanOrEqual(5);
      expect(Math.max(...claimSizes)).toBeLessThanOrEqual(3);
      expect(claimSizes.reduce((a, b) => a + b, 0)).toBe(40);
    });
  });
}
