import { expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Job, Queue } from '../../lib/contract/types.js';
import { MAX_BATCH } from '../../lib/contract/validate.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { waitFor } from '../helpers/engines.js';
import { gate, MemoryLogger } from '../nest/nest-fixtures.js';

// Engine-independent worker behaviour, run on a SQLite file: a worker whose concurrency plus
// prefetch exceeds what one ackBatch accepts (MAX_BATCH ids) never sends a bigger batch, even
// when more completions than that pile up behind a slow ack write.
it('acks that pile up past MAX_BATCH behind a slow write go out in batches the store accepts', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'alk-ackcap-'));
  const store = await openSqliteStore({ path: join(dir, 'store.db') });
  try {
    const real = store.queue('ack-cap');
    const total = MAX_BATCH + 101;
    for (let start = 0; start < total; start += 5_000)
      await real.enqueueMany(Array.from({ length: Math.min(5_000, total - start) }, (_, i) => start + i));
    const sizes: number[] = [];
    const firstWrite = gate();
    const handlersGo = gate();
    let firstAck = true;
    let finished = 0;
    // The first ack write waits until more than MAX_BATCH completions are queued behind it.
    const queue = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'ackBatch') {
          return async (jobs: readonly Pick<Job, 'id' | 'claimToken'>[]) => {
            sizes.push(jobs.length);
            if (firstAck) {
              firstAck = false;
              handlersGo.open();
              await firstWrite.promise;
            }
            return target.ackBatch(jobs);
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Queue;
    let first = true;
    const w = new QueueWorker({
      queue,
      name: 'ack cap',
      concurrency: MAX_BATCH,
      prefetch: 100,
      workerId: 'ack-cap',
      logger: new MemoryLogger(),
      idlePollIntervalMs: 100,
      drainTimeoutMs: 10_000,
      handler: async () => {
        if (first) first = false;
        else await handlersGo.promise;
        finished += 1;
        if (finished >= total) firstWrite.open();
      },
    });
    w.start();
    try {
      await waitFor(
        'every job acked',
        async () => {
          const st = await real.stats();
          return st.pending === 0 && st.processing === 0;
        },
        60_000,
        20,
      );
    } finally {
      firstWrite.open();
      await w.stop();
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_BATCH);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(total);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}, 90_000);
