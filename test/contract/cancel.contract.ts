import { expect, it } from '@jest/globals';
import { InvalidArgument, InvalidName, JobCancelled } from '../../lib/contract/errors.js';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';
import { claimSoon, deferred, startWorker, vectors } from './results-fixtures.js';

/** Puts a job of `q` in `state` (per the cancel vectors); resolves its id (a fresh unknown id for `missing`). */
async function jobIn(q: Queue, state: string): Promise<{ id: number; claim: Job | null }> {
  const id = await q.enqueue({ state }, { maxAttempts: 1 });
  if (state === 'pending') return { id, claim: null };
  const job = await claimSoon(q);
  if (state === 'processing') return { id, claim: job };
  if (state === 'dead') await job.fail(new Error('x'));
  if (state === 'completed') await job.ack('r');
  if (state === 'cancelled') await q.cancel(id);
  if (state === 'missing') {
    await job.ack();
    return { id: id + 1_000_000, claim: null };
  }
  return { id, claim: null };
}

/** Cancel from any process (SPEC §11): a fenced `cancelled` outcome, never retried, never dead. */
export function cancelContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  it('answers and records per the conformance vectors, for every state', async () => {
    for (const v of vectors.cancel) {
      const q = store().queue(uid(`c-${v.state}`));
      const { id } = await jobIn(q, v.state);
      expect([v.state, await q.cancel(id)]).toEqual([v.state, v.returns]);
      expect([v.state, (await q.getJob(id))?.state ?? null]).toEqual([v.state, v.after]);
    }
  });

  it('a cancelled pending job is never claimed, frees its unique key, and keeps payload and headers readable', async () => {
    const q = store().queue(uid('c-pending'));
    const id = await q.enqueue({ a: 1 }, { uniqueKey: 'u', headers: { h: 'v' } });
    expect(await env.other.queue(q.name).cancel(id)).toBe(true);
    expect(await q.claimOne('w')).toBeNull();
    const info = (await q.getJob(id))!;
    expect([info.state, info.payload, info.headers, typeof info.finishedAt]).toEqual([
      'cancelled',
      { a: 1 },
      { h: 'v' },
      'number',
    ]);
    expect(await q.enqueue(2, { uniqueKey: 'u' })).not.toBe(id);
    expect((await q.stats()).pending).toBe(1);
  });

  it("a cancelled processing job is fenced: the claim's ack, retry, fail, heartbeat and progress land nowhere", async () => {
    const q = store().queue(uid('c-fence'));
    const id = await q.enqueue(1);
    const job = await claimSoon(q);
    expect(await env.other.queue(q.name).cancel(id)).toBe(true);
    expect(await job.ack('late result')).toBe(false);
    expect(await job.ack()).toBe(false);
    expect(await job.retry(new Error('x'))).toBe(false);
    expect(await job.fail(new Error('x'))).toBe(false);
    expect(await job.heartbeat(1000)).toBe(false);
    expect(await job.progress(5)).toBe(false);
    const info = (await q.getJob(id))!;
    expect(info.state).toBe('cancelled');
    expect('result' in info).toBe(false);
    expect(await q.claimOne('w')).toBeNull();
    expect((await q.stats()).processing).toBe(0);
  });

  it('cancelByKey cancels the live job holding a unique key', async () => {
    const q = store().queue(uid('c-key'));
    const id = await q.enqueue(1, { uniqueKey: 'order-7' });
    expect(await q.cancelByKey('order-7')).toBe(true);
    expect(await q.cancelByKey('order-7')).toBe(false);
    expect((await q.getJob(id))!.state).toBe('cancelled');
  });

  it("cancelByOrderingKey cancels the key's whole line (running head included); later jobs of the key run", async () => {
    const q = store().queue(uid('c-okey'));
    const ids = [
      await q.enqueue(1, { orderingKey: 'acct' }),
      await q.enqueue(2, { orderingKey: 'acct' }),
      await q.enqueue(3, { orderingKey: 'acct' }),
    ];
    const other = await q.enqueue(9, { orderingKey: 'other' });
    const head = await claimSoon(q);
    expect(head.id).toBe(ids[0]);
    expect(await env.other.queue(q.name).cancelByOrderingKey('acct')).toBe(3);
    for (const id of ids) expect((await q.getJob(id))!.state).toBe('cancelled');
    expect(await head.ack()).toBe(false);
    const next = await q.enqueue(4, { orderingKey: 'acct' });
    const claimed = (await q.claimBatch(10, 'w')).map((j) => j.id).sort((a, b) => a - b);
    expect(claimed).toEqual([other, next].sort((a, b) => a - b));
  });

  it('cancelledAmong names the cancelled ids of the queue only', async () => {
    const q = store().queue(uid('c-among'));
    const a = await q.enqueue(1);
    const b = await q.enqueue(2);
    await q.cancel(b);
    expect(await q.cancelledAmong([a, b, b + 1000])).toEqual([b]);
    expect(await store().queue(uid('c-elsewhere')).cancelledAmong([b])).toEqual([]);
    expect(await q.cancelledAmong([])).toEqual([]);
  });

  it("aborts the running handler's signal in another process's worker (reason JobCancelled); the job is never retried", async () => {
    const name = uid('c-run');
    const started = deferred<number>();
    let runs = 0;
    let reason: unknown = null;
    const w = startWorker(env.other, name, (job, signal) => {
      runs += 1;
      if (job.payload === 'after') return Promise.resolve();
      started.resolve(job.id);
      return new Promise((_, reject) => {
        signal.addEventListener('abort', () => {
          reason = signal.reason;
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        });
      });
    });
    try {
      const q = store().queue(name);
      const id = await q.enqueue(1, { maxAttempts: 5 });
      expect(await started.promise).toBe(id);
      expect(await q.cancel(id)).toBe(true);
      await waitFor('the handler aborted', () => reason !== null);
      expect(reason).toBeInstanceOf(JobCancelled);
      expect((reason as JobCancelled).jobId).toBe(id);
      // A marker job behind it runs, so the worker went on; the cancelled one never ran again.
      const marker = await q.enqueueAndWait('after', { timeoutMs: 20_000 }).catch(() => 'rejected');
      expect(marker).toBeUndefined();
      expect(runs).toBe(2);
      const info = (await q.getJob(id))!;
      expect([info.state, info.attempts]).toEqual(['cancelled', 1]);
    } finally {
      await w.stop();
    }
  });

  it('refuses bad input before any I/O, naming it', async () => {
    const q = store().queue(uid('c-bad'));
    expect((await expectError(() => q.cancel(-1), InvalidArgument)).message).toContain('id');
    await expectError(() => q.cancelByKey(''), InvalidName);
    expect((await expectError(() => q.cancelByOrderingKey('\u0000'), InvalidName)).message).toContain('orderingKey');
    expect((await expectError(() => q.cancelledAmong([1, -1]), InvalidArgument)).message).toContain('ids[1]');
  });
}
