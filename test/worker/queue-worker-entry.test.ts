// QueueWorker from the root entry point (`nestjs-alkstore`), run without Nest on both engines.
import { describe, expect, it } from '@jest/globals';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Job, Store, StoreLogger } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';

const quiet: StoreLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('QueueWorker entry points', () => {
  it('the root exports the worker class; nestjs-alkstore/nest does not export it again', async () => {
    const nest: Record<string, unknown> = await import('../../lib/nest/index.js');
    const worker = await import('../../lib/worker/queue-worker.js');
    expect(worker.QueueWorker).toBe(QueueWorker);
    expect('QueueWorker' in nest).toBe(false);
  });
});

for (const engine of contractEngines()) {
  describe(`QueueWorker from nestjs-alkstore, without Nest (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('acks a job, retries a failure with the queue backoff and dead-letters a PermanentError', async () => {
      const q = store.queue('plain-worker', { maxAttempts: 3, backoffBaseMs: 1 });
      const seen: number[] = [];
      let failedOnce = false;
      const worker = new QueueWorker({
        queue: q,
        name: 'plain worker',
        handler: async (job: Job) => {
          const { n } = job.payloadAs<{ n: number }>();
          if (n === 2 && !failedOnce) {
            failedOnce = true;
            throw new Error('transient');
          }
          if (n === 3) throw new PermanentError('bad payload');
          seen.push(n);
        },
        concurrency: 2,
        idlePollIntervalMs: 50,
        drainTimeoutMs: 5_000,
        workerId: 'plain-worker-1',
        logger: quiet,
      });
      worker.start();
      try {
        for (const n of [1, 2, 3]) await q.enqueue({ n });
        await waitFor('two acks and one dead letter', async () => {
          const s = await q.stats();
          return s.pending === 0 && s.processing === 0 && s.dead === 1;
        });
      } finally {
        await worker.stop();
      }
      expect(seen.sort()).toEqual([1, 2]);
      expect(failedOnce).toBe(true);
    });
  });
}
