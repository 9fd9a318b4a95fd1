// QueueWorker from the `alkstore/worker` entry point, run without Nest on both engines, and the same class
// from `alkstore/nest` and the deprecated lib/nest/workers path.
import { describe, expect, it } from '@jest/globals';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Job, Store, StoreLogger } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';

const quiet: StoreLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('QueueWorker entry points', () => {
  it('alkstore/nest re-exports the alkstore/worker class, and the old lib/nest/workers path still resolves to it', async () => {
    const nest = await import('../../lib/nest/index.js');
    const old = await import('../../lib/nest/workers/queue-worker.js');
    expect(nest.QueueWorker).toBe(QueueWorker);
    expect(old.QueueWorker).toBe(QueueWorker);
  });
});

for (const engine of contractEngines()) {
  describe(`QueueWorker from alkstore/worker, without Nest (${engine.name})`, () => {
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
