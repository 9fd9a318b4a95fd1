import { expect, it } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { QueueWorker, type QueueWorkerOptions } from '../../lib/worker/queue-worker.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** docs/vocabulary.md on the Store API: `leaseMs` (queue, job and claim options); the 0.2 name is refused. */
export function vocabularyContract(engine: EngineFixture): void {
  const env = useEnv(engine);

  it("leaseMs on the queue is the lease its jobs' claims get; on a job and on a claim it overrides it", async () => {
    const q = env.store.queue(uid('lease'), { leaseMs: 7_000 });
    expect(q.opts.leaseMs).toBe(7_000);
    await q.enqueue('queue');
    await q.enqueue('job', { leaseMs: 8_000 });
    const byPayload = new Map((await q.claimBatch(10, 'w')).map((j) => [j.payloadAs<string>(), j.leaseMs]));
    expect(byPayload).toEqual(
      new Map([
        ['queue', 7_000],
        ['job', 8_000],
      ]),
    );
    await q.enqueue('claim');
    expect((await q.claimOne('w', { leaseMs: 9_000 }))?.leaseMs).toBe(9_000);
  });

  it('the 0.2 name visibilityTimeoutMs is InvalidOption naming leaseMs on queue, job and claim options, before any write', async () => {
    const old = { visibilityTimeoutMs: 2_000 } as object;
    const name = uid('lease');
    const onQueue = await expectError(() => env.store.queue(name, old), InvalidOption);
    expect(onQueue.field).toBe('visibilityTimeoutMs');
    expect(onQueue.message).toMatch(/renamed.*leaseMs/);
    const q = env.store.queue(name);
    const onJob = await expectError(() => q.enqueue('x', old), InvalidOption);
    expect(onJob.message).toMatch(/visibilityTimeoutMs.*leaseMs/);
    expect((await q.stats()).pending).toBe(0);
    await q.enqueue('claim');
    const onClaim = await expectError(() => q.claimOne('w', old), InvalidOption);
    expect(onClaim.message).toMatch(/visibilityTimeoutMs.*leaseMs/);
    expect((await q.stats()).pending).toBe(1);
  });

  it('QueueWorker: leaseMs is the lease of its claims; the 0.2 name visibilityTimeoutMs is InvalidOption naming leaseMs', async () => {
    const seen = new Map<string, number>();
    const queue = env.store.queue(uid('qw'));
    const worker = new QueueWorker({
      queue,
      name: 'vocab new',
      concurrency: 1,
      idlePollIntervalMs: 50,
      drainTimeoutMs: 1_000,
      workerId: 'w-new',
      logger: silent,
      handler: async (job: Job) => void seen.set('new', job.leaseMs),
      leaseMs: 6_000,
    });
    worker.start();
    await queue.enqueue('new');
    await waitFor('the worker ran its job', () => seen.has('new'));
    await worker.stop();
    expect(seen.get('new')).toBe(6_000);
    const options = {
      queue: env.store.queue(uid('qw')),
      name: 'old',
      concurrency: 1,
      idlePollIntervalMs: 50,
      drainTimeoutMs: 1_000,
      workerId: 'w',
      logger: silent,
      handler: async () => undefined,
      visibilityTimeoutMs: 2_000,
    } as QueueWorkerOptions;
    expect(() => new QueueWorker(options)).toThrow(/visibilityTimeoutMs.*renamed.*leaseMs/);
  });
}
