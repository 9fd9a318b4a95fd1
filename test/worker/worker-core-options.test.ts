import { describe, expect, it } from '@jest/globals';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { OutboxDispatcher } from '../../lib/outbox/outbox-dispatcher.js';
import { WorkerCore, type FailureOutcome, type WorkerCoreOptions } from '../../lib/worker/index.js';
import { sqliteFile, waitFor, withEngineDb } from '../helpers/engines.js';
import { expectInvalidArgument, expectInvalidOption, thrown } from '../helpers/typed-errors.js';
import { MemoryLogger } from '../nest/nest-fixtures.js';

/** A Queue that only records which of its methods were called: a constructor check must not touch it. */
function recordingQueue(calls: string[]): Queue {
  const touch = (m: string) => (): never => {
    calls.push(m);
    throw new Error(`${m} must not be called`);
  };
  return {
    name: 'fake',
    claimBatch: touch('claimBatch'),
    ackBatch: touch('ackBatch'),
    listen: touch('listen'),
    stats: touch('stats'),
  } as unknown as Queue;
}

const retry = (_job: Job, _failure: unknown, error: unknown): FailureOutcome => ({
  kind: 'retry',
  reason: 'error',
  delayMs: undefined,
  error,
});

function base(queue: Queue, logger = new MemoryLogger()): WorkerCoreOptions {
  return {
    queue,
    name: 'opts test',
    handler: async () => undefined,
    concurrency: 2,
    prefetch: 0,
    maxClaim: 2,
    leaseMs: 30_000,
    renewLeases: true,
    jobSignals: false,
    storeTimeoutMs: 1_000,
    pollIntervalMs: 50,
    idlePollIntervalMs: 50,
    firstBackoffMs: 10,
    maxBackoffMs: 100,
    drainTimeoutMs: 1_000,
    minOutcomeDrainMs: 0,
    releaseOnDrainTimeout: true,
    stopMessage: 'stopped',
    decide: retry,
    workerId: 'opts-test',
    logger,
    logHandlerErrors: false,
    observer: null,
    statsIntervalMs: 10_000,
  };
}

/** Builds a WorkerCore with `patch` over valid options and returns what the constructor threw. */
function refused(patch: Record<string, unknown>, calls: string[]): unknown {
  const o = { ...base(recordingQueue(calls)), ...patch } as WorkerCoreOptions;
  return thrown(() => new WorkerCore(o));
}

describe('WorkerCore options (checked in the constructor, before any I/O)', () => {
  const numbers: [string, unknown, string[]][] = [
    ['concurrency', Number.NaN, ['NaN']],
    ['concurrency', 0, ['[1, ']],
    ['concurrency', 1.5, ['fraction']],
    ['concurrency', '2', ['string']],
    ['prefetch', -1, ['[0, ']],
    ['prefetch', Number.NaN, ['NaN']],
    ['autoPrefetchMax', -1, ['[0, ']],
    ['autoPrefetchMax', Infinity, ['Infinity']],
    ['ackWrites', 0, ['[1, 16]']],
    ['ackWrites', 17, ['[1, 16]']],
    ['maxClaim', 0, ['[1, 10000]']],
    ['maxClaim', 10_001, ['[1, 10000]']],
    ['leaseMs', 0, ['[1, ']],
    ['leaseMs', 2 ** 31, ['2147483647']],
    ['handlerTimeoutMs', -5, ['[1, ']],
    ['storeTimeoutMs', Number.NaN, ['NaN']],
    ['pollIntervalMs', 0, ['[1, ']],
    ['idlePollIntervalMs', undefined, ['undefined']],
    ['firstBackoffMs', 0, ['[1, ']],
    ['maxBackoffMs', 5, ['at least firstBackoffMs (10)']],
    ['drainTimeoutMs', -1, ['[0, ']],
    ['minOutcomeDrainMs', Number.NaN, ['NaN']],
    ['statsIntervalMs', 0, ['[1, ']],
  ];
  for (const [option, value, words] of numbers) {
    it(`${option}: ${String(value)} is an InvalidArgument naming ${option}; nothing is called on the queue`, () => {
      const calls: string[] = [];
      expectInvalidArgument(refused({ [option]: value }, calls), option, words);
      expect(calls).toEqual([]);
    });
  }

  it('batchSize in batch mode: outside 1..10 000 is an InvalidArgument naming batchSize', () => {
    const calls: string[] = [];
    const batch = { handler: undefined, batchHandler: async () => undefined };
    expectInvalidArgument(refused({ ...batch, batchSize: 0 }, calls), 'batchSize', ['[1, 10000]']);
    expectInvalidArgument(refused({ ...batch, batchSize: 10_001 }, calls), 'batchSize', ['[1, 10000]']);
    expectInvalidArgument(refused({ ...batch, batchSize: Number.NaN }, calls), 'batchSize', ['NaN']);
    expect(calls).toEqual([]);
  });

  const shapes: [string, Record<string, unknown>, string, string[]][] = [
    ['options not an object', { __whole: null }, 'WorkerCore options', ['object']],
    [
      'a queue without claimBatch',
      { queue: { name: 'q', ackBatch: () => 0, listen: () => null, stats: () => null } },
      'queue',
      ['claimBatch'],
    ],
    ['a queue that is a string', { queue: 'jobs' }, 'queue', ['Queue']],
    ['a blank name', { name: '  ' }, 'name', ['non-empty']],
    ['no handler', { handler: undefined }, 'handler', ['exactly one']],
    ['both handlers', { batchHandler: async () => undefined }, 'handler', ['exactly one']],
    ['a handler that is not a function', { handler: 'send' }, 'handler', ['function']],
    ['a batchHandler that is not a function', { handler: undefined, batchHandler: {} }, 'batchHandler', ['function']],
    ['batchSize without batchHandler', { batchSize: 10 }, 'batchSize', ['batchHandler']],
    [
      'prefetch with batchHandler',
      { handler: undefined, batchHandler: async () => undefined, prefetch: 4 },
      'prefetch',
      ['batchHandler'],
    ],
    ['renewLeases not a boolean', { renewLeases: 'yes' }, 'renewLeases', ['boolean']],
    ['jobSignals not a boolean', { jobSignals: 1 }, 'jobSignals', ['boolean']],
    ['releaseOnDrainTimeout not a boolean', { releaseOnDrainTimeout: undefined }, 'releaseOnDrainTimeout', ['boolean']],
    ['logHandlerErrors not a boolean', { logHandlerErrors: null }, 'logHandlerErrors', ['boolean']],
    ['localHandoff not a boolean', { localHandoff: 'true' }, 'localHandoff', ['boolean']],
    ['timeoutError not a function', { timeoutError: new Error('x') }, 'timeoutError', ['function']],
    ['stopMessage not a string', { stopMessage: 3 }, 'stopMessage', ['string']],
    ['decide missing', { decide: undefined }, 'decide', ['function']],
    ['a blank workerId', { workerId: ' ' }, 'workerId', ['non-empty']],
    ['a workerId that is a number', { workerId: 7 }, 'workerId', ['non-empty']],
    ['a logger without error', { logger: { log: () => undefined, warn: () => undefined } }, 'logger', ['error']],
    ['an observer that is a function', { observer: () => undefined }, 'observer', ['object']],
    ['an observer hook that is not a function', { observer: { claimed: 1 } }, 'observer.claimed', ['function']],
    ['wrap not a function', { wrap: 'span' }, 'wrap', ['function']],
    ['ackBatch not a function', { ackBatch: 'receipts' }, 'ackBatch', ['function']],
  ];
  for (const [what, patch, field, words] of shapes) {
    it(`${what} is an InvalidOption naming ${field}; nothing is called on the queue`, () => {
      const calls: string[] = [];
      const err =
        '__whole' in patch ? thrown(() => new WorkerCore(null as unknown as WorkerCoreOptions)) : refused(patch, calls);
      expectInvalidOption(err, field, words);
      expect(calls).toEqual([]);
    });
  }

  it('accepts the bounds (and constructs without touching the queue)', () => {
    const calls: string[] = [];
    const edge = {
      ...base(recordingQueue(calls)),
      concurrency: 1,
      maxClaim: 10_000,
      drainTimeoutMs: 0,
      minOutcomeDrainMs: 0,
      firstBackoffMs: 7,
      maxBackoffMs: 7,
      leaseMs: undefined,
    };
    expect(new WorkerCore(edge).prefetch).toBe(0);
    const batch = {
      ...base(recordingQueue(calls)),
      handler: undefined,
      batchHandler: async () => undefined,
      batchSize: 10_000,
      wrap: null,
      observer: {},
    };
    expect(new WorkerCore(batch).running).toBe(false);
    expect(calls).toEqual([]);
  });
});

describe('the hosts always pass the core checks', () => {
  it('the outbox dispatcher with a poll interval above a quarter of its lease (its first backoff above the lease cap)', () => {
    const store = { outbox: () => ({ queue: recordingQueue([]) }) } as unknown as Pick<Store, 'outbox'>;
    const settings = {
      leaseMs: 2_000,
      publishTimeoutMs: 1_000,
      storeTimeoutMs: 500,
      busyPollIntervalMs: 1_000,
      idlePollIntervalMs: 1_000,
    };
    expect(
      () => new OutboxDispatcher({ store, outbox: 'orders', handler: async () => undefined, settings }),
    ).not.toThrow();
  });

  it('the queue worker at its largest concurrency and prefetch (a claim is capped at 10 000)', () => {
    const w = new QueueWorker({
      queue: recordingQueue([]),
      handler: async () => undefined,
      name: 'big',
      concurrency: 10_000,
      prefetch: 10_000,
      idlePollIntervalMs: 100,
      drainTimeoutMs: 0,
      workerId: 'w',
      logger: new MemoryLogger(),
    });
    expect(w).toBeInstanceOf(QueueWorker);
  });

  it('the queue worker names the handler for a bad leaseMs or idlePollIntervalMs', () => {
    const opts = {
      queue: recordingQueue([]),
      handler: async () => undefined,
      name: 'Mailer.send',
      concurrency: 1,
      idlePollIntervalMs: 100,
      drainTimeoutMs: 0,
      workerId: 'w',
      logger: new MemoryLogger(),
    };
    expectInvalidOption(
      thrown(() => new QueueWorker({ ...opts, leaseMs: 0 })),
      'leaseMs of Mailer.send',
      ['[1, '],
    );
    expectInvalidOption(
      thrown(() => new QueueWorker({ ...opts, idlePollIntervalMs: Number.NaN })),
      'idlePollIntervalMs of Mailer.send',
      ['NaN'],
    );
  });
});

describe('a throwing decide (sqlite file)', () => {
  let store!: Store;
  withEngineDb(sqliteFile, (_db, s) => {
    store = s;
  });

  it('is logged once naming the job; the job is retried with the queue backoff (dead at maxAttempts, dead for a PermanentError); the worker keeps running', async () => {
    const BACKOFF = 60_000;
    const q = store.queue('decide-throws', { backoffBaseMs: BACKOFF });
    const logger = new MemoryLogger();
    const handled: string[] = [];
    let decideCalls = 0;
    const core = new WorkerCore({
      ...base(q, logger),
      handler: async (job: Job) => {
        const p = job.payload as string;
        handled.push(p);
        if (p === 'permanent') throw new PermanentError('never');
        if (p !== 'ok') throw new Error(`handler failed on ${p}`);
      },
      decide: () => {
        decideCalls += 1;
        throw new RangeError('policy bug');
      },
    });
    const stop = new AbortController();
    const done = core.run(stop.signal);
    try {
      const before = Date.now();
      const [failing] = await q.enqueueMany(['fails']);
      const retried = await waitFor('the failing job back to pending', async () => {
        const j = await q.getJob(failing!);
        return j?.state === 'pending' && j.attempts === 1 ? j : null;
      });
      // The queue's own backoff, not an immediate retry and not a dead-letter.
      expect(retried.runAt).toBeGreaterThanOrEqual(before + BACKOFF / 2);
      expect(retried.lastError).toContain('handler failed on fails');
      const lines = logger.lines.filter((l) => l.startsWith('error ') && l.includes(`job ${failing}`));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('decide failed');
      expect(lines[0]).toContain('policy bug');
      expect(lines[0]).toContain("retrying it with the queue's backoff");

      // Still running: later jobs are handled, a PermanentError dead-letters, an exhausted one is dead.
      const [perm] = await q.enqueueMany(['permanent']);
      const last = await q.enqueue('last try', { maxAttempts: 1 });
      const [ok] = await q.enqueueMany(['ok']);
      await waitFor('the later jobs settled', async () => {
        const [a, b, c] = await Promise.all([q.getJob(perm!), q.getJob(last), q.getJob(ok!)]);
        // Acked jobs are deleted.
        return a?.state === 'dead' && b?.state === 'dead' && c === null;
      });
      expect(decideCalls).toBe(3);
      expect(core.running).toBe(true);
    } finally {
      stop.abort();
      await done;
    }
    expect(handled.sort()).toEqual(['fails', 'last try', 'ok', 'permanent']);
  });

  it('the outbox dispatcher with a random source out of [0, 1): its RetryPolicy throws, the row is retried with the queue backoff, the next row is delivered', async () => {
    const logger = new MemoryLogger();
    const delivered: string[] = [];
    const d = new OutboxDispatcher({
      store,
      outbox: 'bad-random',
      logger,
      random: () => 2,
      settings: { busyPollIntervalMs: 20, idlePollIntervalMs: 50 },
      handler: async (job) => {
        if (job.payload === 'fails') throw new Error('broker down');
        delivered.push(job.payload as string);
      },
    });
    const ob = store.outbox('bad-random');
    const stop = new AbortController();
    const done = d.run(stop.signal);
    try {
      const id = await ob.enqueue('fails');
      const row = await waitFor('the row back to pending', async () => {
        const j = await ob.queue.getJob(id);
        return j?.state === 'pending' && j.attempts === 1 ? j : null;
      });
      expect(row.lastError).toContain('broker down');
      const lines = logger.lines.filter((l) => l.includes('decide failed'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`job ${id}`);
      expect(lines[0]).toContain('random must return a number in [0, 1)');
      await ob.enqueue('next');
      await waitFor('the next row delivered', () => delivered.includes('next'));
    } finally {
      stop.abort();
      await done;
    }
  });

  it('an answer that is not an outcome is handled the same way', async () => {
    const q = store.queue('decide-bad-answer', { backoffBaseMs: 60_000 });
    const logger = new MemoryLogger();
    const core = new WorkerCore({
      ...base(q, logger),
      handler: async () => {
        throw new Error('nope');
      },
      decide: () => undefined as unknown as FailureOutcome,
    });
    const stop = new AbortController();
    const done = core.run(stop.signal);
    try {
      const id = await q.enqueue('x');
      await waitFor(
        'back to pending',
        async () => (await q.getJob(id))?.state === 'pending' && (await q.getJob(id))?.attempts === 1,
      );
      expect(
        logger.lines
          .filter((l) => l.includes('decide failed'))
          .map((l) => l.includes(`job ${id}`) && l.includes('undefined')),
      ).toEqual([true]);
    } finally {
      stop.abort();
      await done;
    }
  });
});
