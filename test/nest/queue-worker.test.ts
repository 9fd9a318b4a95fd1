import { describe, expect, it } from '@jest/globals';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { gate, MemoryLogger } from './nest-fixtures.js';

type AckRef = Pick<Job, 'id' | 'claimToken'>;

/** The real queue with `ackBatch` replaced by `hook` (`real` reaches the database); a throw stands for a store error. */
function withAckHook(
  queue: Queue,
  hook: (jobs: readonly AckRef[], real: (jobs: readonly AckRef[]) => Promise<number>) => Promise<number>,
): Queue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === 'ackBatch') return (jobs: readonly AckRef[]) => hook(jobs, (js) => target.ackBatch(js));
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function worker(
  queue: Queue,
  handler: (job: Job) => Promise<void>,
  logger: MemoryLogger,
  extra: { concurrency?: number; drainTimeoutMs?: number } = {},
): QueueWorker {
  return new QueueWorker({
    queue,
    handler,
    name: 'test worker',
    concurrency: extra.concurrency ?? 4,
    idlePollIntervalMs: 200,
    drainTimeoutMs: extra.drainTimeoutMs ?? 5_000,
    workerId: 'test-worker',
    logger,
  });
}

for (const engine of contractEngines()) {
  describe(`QueueWorker batched acks (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('claims up to its concurrency in one statement and acks the jobs that finish together in one ackBatch', async () => {
      const q = store.queue('qw-batched');
      const ids = await q.enqueueMany([1, 2, 3, 4]);
      const writes: number[][] = [];
      const hold = gate();
      const started: number[] = [];
      const w = worker(
        withAckHook(q, (jobs, real) => {
          writes.push(jobs.map((j) => j.id));
          return real(jobs);
        }),
        async (job) => {
          started.push(job.id);
          await hold.promise;
        },
        new MemoryLogger(),
      );
      w.start();
      try {
        await waitFor('four handlers running', () => started.length === 4);
        hold.open();
        await waitFor('all four acked', async () => (await q.stats()).processing === 0);
      } finally {
        await w.stop();
      }
      expect(writes).toHaveLength(1);
      expect([...writes[0]!].sort((a, b) => a - b)).toEqual(ids);
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('retries a failed ack write until it lands, without running the job again', async () => {
      const q = store.queue('qw-ack-retry');
      const id = await q.enqueue({ n: 1 });
      let failuresLeft = 2;
      const runs: number[] = [];
      const logger = new MemoryLogger();
      const w = worker(
        withAckHook(q, async (jobs, real) => {
          if (failuresLeft > 0) {
            failuresLeft -= 1;
            throw new Error('simulated store outage');
          }
          return real(jobs);
        }),
        async (job) => void runs.push(job.id),
        logger,
      );
      w.start();
      try {
        await waitFor('the ack landed', async () => (await q.getJob(id)) === null);
      } finally {
        await w.stop();
      }
      expect(failuresLeft).toBe(0);
      expect(runs).toEqual([id]);
      expect(logger.has(/recording the ack of 1 job\(s\) failed; retrying/)).toBe(true);
    });

    it('takes a fenced ack (a lapsed claim) as the at-least-once window, not an error, and keeps working', async () => {
      const q = store.queue('qw-fenced');
      const first = await q.enqueue({ n: 1 });
      const logger = new MemoryLogger();
      const runs: number[] = [];
      const w = worker(
        // The first job's claim token no longer matches, as after a lapsed claim: its ack changes zero rows.
        withAckHook(q, (jobs, real) =>
          real(jobs.map((j): AckRef => (j.id === first ? { id: j.id, claimToken: 'not-the-claim-token' } : j))),
        ),
        async (job) => void runs.push(job.id),
        logger,
      );
      w.start();
      try {
        await waitFor('the fenced ack was noticed', () => logger.has(/1 of 1 ack\(s\) came after the claim lapsed/));
        const second = await q.enqueue({ n: 2 });
        await waitFor('a later job is acked', async () => (await q.getJob(second)) === null);
      } finally {
        await w.stop();
      }
      expect((await q.getJob(first))?.state).toBe('processing');
      expect(logger.lines.filter((l) => l.startsWith('error'))).toEqual([]);
      await q.cancel(first);
    });

    it('stop() writes the pending acks before it resolves', async () => {
      const q = store.queue('qw-stop');
      const ids = await q.enqueueMany([1, 2, 3]);
      const writeHeld = gate();
      let writing = 0;
      const done: number[] = [];
      const w = worker(
        withAckHook(q, async (jobs, real) => {
          writing += 1;
          await writeHeld.promise;
          return real(jobs);
        }),
        async (job) => void done.push(job.id),
        new MemoryLogger(),
      );
      w.start();
      await waitFor('the handlers ran and the ack write started', () => done.length === 3 && writing > 0);
      let stopped = false;
      const stopping = w.stop().then(() => {
        stopped = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(stopped).toBe(false);
      writeHeld.open();
      await stopping;
      for (const id of ids) expect(await q.getJob(id)).toBeNull();
    });

    it('frees a slot when its handler returns, so a slow ack write does not hold the next claim', async () => {
      const q = store.queue('qw-pipeline');
      await q.enqueueMany([1, 2]);
      const writeHeld = gate();
      const runs: number[] = [];
      const w = worker(
        withAckHook(q, async (jobs, real) => {
          await writeHeld.promise;
          return real(jobs);
        }),
        async (job) => void runs.push(job.id),
        new MemoryLogger(),
        { concurrency: 1 },
      );
      w.start();
      try {
        // With concurrency 1 the second job can only run while the first one's ack write is still held.
        await waitFor('both jobs ran', () => runs.length === 2);
        writeHeld.open();
        await waitFor('both acked', async () => (await q.stats()).processing === 0);
      } finally {
        writeHeld.open();
        await w.stop();
      }
      expect(await q.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });
  });
}
