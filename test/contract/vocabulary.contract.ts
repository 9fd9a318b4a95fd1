import { afterAll, expect, it, jest } from '@jest/globals';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Job, Queue } from '../../lib/contract/types.js';
import { QueueWorker, type QueueWorkerOptions } from '../../lib/worker/queue-worker.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';

const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** docs/vocabulary.md on the Store API: `leaseMs` (queue, job and claim options), `visibilityTimeoutMs` deprecated. */
// One spy for the file: deprecation warnings are once per process, so the first engine's run sees them.
const warnings: string[] = [];
let spied = false;
function spyOnWarnings(): void {
  if (spied) return;
  spied = true;
  const spy = jest.spyOn(process, 'emitWarning').mockImplementation((w: string | Error) => {
    warnings.push(String(w));
  });
  afterAll(() => spy.mockRestore());
}

export function vocabularyContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  spyOnWarnings();

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

  it('the deprecated visibilityTimeoutMs does the same on queue, job and claim options, with one warning per place and process', async () => {
    const q = env.store.queue(uid('lease'), { visibilityTimeoutMs: 7_000 });
    expect(q.opts.leaseMs).toBe(7_000);
    await q.enqueue('job', { visibilityTimeoutMs: 8_000 });
    expect((await q.claimOne('w'))?.leaseMs).toBe(8_000);
    await q.enqueue('claim');
    expect((await q.claimOne('w', { visibilityTimeoutMs: 9_000 }))?.leaseMs).toBe(9_000);
    for (const where of ['queue', 'claim']) {
      expect(
        warnings.filter((w) => w.includes(`alkstore: ${where} option visibilityTimeoutMs`) && w.includes('leaseMs')),
      ).toHaveLength(1);
    }
  });

  it('leaseMs and visibilityTimeoutMs with different values are InvalidOption naming both, before any write', async () => {
    const name = uid('lease');
    expect(
      (await expectError(() => env.store.queue(name, { leaseMs: 1_000, visibilityTimeoutMs: 2_000 }), InvalidOption))
        .message,
    ).toMatch(/leaseMs.*visibilityTimeoutMs/);
    const q = env.store.queue(name);
    const err = await expectError(() => q.enqueue('x', { leaseMs: 1_000, visibilityTimeoutMs: 2_000 }), InvalidOption);
    expect(err.field).toBe('leaseMs');
    expect((await q.stats()).pending).toBe(0);
    await expectError(() => q.claimOne('w', { leaseMs: 1_000, visibilityTimeoutMs: 2_000 }), InvalidOption);
  });

  it('QueueWorker: leaseMs is the lease of its claims; the deprecated visibilityTimeoutMs too; both differently is InvalidOption', async () => {
    const seen = new Map<string, number>();
    const run = async (queue: Queue, lease: Partial<QueueWorkerOptions>, tag: string): Promise<void> => {
      const worker = new QueueWorker({
        queue,
        name: `vocab ${tag}`,
        concurrency: 1,
        idlePollIntervalMs: 50,
        drainTimeoutMs: 1_000,
        workerId: `w-${tag}`,
        logger: silent,
        handler: async (job: Job) => void seen.set(tag, job.leaseMs),
        ...lease,
      });
      worker.start();
      await queue.enqueue(tag);
      await waitFor(`the ${tag} worker ran its job`, () => seen.has(tag));
      await worker.stop();
    };
    await run(env.store.queue(uid('qw')), { leaseMs: 6_000 }, 'new');
    await run(env.store.queue(uid('qw')), { visibilityTimeoutMs: 6_500 }, 'old');
    expect(seen).toEqual(
      new Map([
        ['new', 6_000],
        ['old', 6_500],
      ]),
    );
    expect(
      () =>
        new QueueWorker({
          queue: env.store.queue(uid('qw')),
          name: 'both',
          concurrency: 1,
          idlePollIntervalMs: 50,
          drainTimeoutMs: 1_000,
          workerId: 'w',
          logger: silent,
          handler: async () => undefined,
          leaseMs: 1_000,
          visibilityTimeoutMs: 2_000,
        }),
    ).toThrow(InvalidOption);
  });
}
