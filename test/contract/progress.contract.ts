import { expect, it } from '@jest/globals';
import { Codec, PayloadTooLarge } from '../../lib/contract/errors.js';
import type { JobInfo, Queue, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';
import { claimSoon, deferred, startWorker, vectors } from './results-fixtures.js';

/** Whether `p` settles before the event loop's next turn (no I/O can complete before then). */
function settledThisTurn(p: Promise<unknown>): Promise<boolean> {
  return Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => setImmediate(() => resolve(false))),
  ]);
}

/** Waits until job `id` shows `progress` (a progress write lands after the call resolves). */
function landed(q: Queue, id: number, progress: unknown): Promise<JobInfo> {
  return waitFor(`progress ${JSON.stringify(progress)} of job ${id}`, async () => {
    const info = await q.getJob(id);
    return info !== null && JSON.stringify(info.progress) === JSON.stringify(progress) ? info : null;
  });
}

/** Job progress (issue #27 item 3): bounded, rate-limited per job, readable by id and announced by a wake. */
export function progressContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  it('job.progress(value) is readable through getJob from another store while the job runs', async () => {
    const q = store().queue(uid('p'));
    const id = await q.enqueue(1);
    const job = await claimSoon(q);
    expect(await job.progress({ pct: 40, stage: 'upload' })).toBe(true);
    const info = await landed(env.other.queue(q.name), id, { pct: 40, stage: 'upload' });
    expect([info.state, info.progress]).toEqual(['processing', { pct: 40, stage: 'upload' }]);
    // The admin API (dashboards, the CLI) shows it too, and the outcome record once the job completes.
    expect((await env.other.admin().jobDetail(q.name, id))!.progress).toEqual({ pct: 40, stage: 'upload' });
    await job.ack('done');
    const detail = (await env.other.admin().jobDetail(q.name, id))!;
    expect([detail.state, detail.progress, detail.result, detail.workerId]).toEqual([
      'completed',
      { pct: 40, stage: 'upload' },
      'done',
      null,
    ]);
  });

  it('wakes listenProgress receivers of another store on commit', async () => {
    const q = store().queue(uid('p-wake'));
    const rx = env.other.queue(q.name).listenProgress();
    try {
      await q.enqueue(1);
      const job = await claimSoon(q);
      const got = rx.recv(AbortSignal.timeout(20_000));
      await job.progress(10);
      expect(await got).not.toBeNull();
    } finally {
      rx.close();
    }
  });

  it('keeps the newest value of a burst and writes it with the outcome (ack right after the burst)', async () => {
    const q = store().queue(uid('p-burst'));
    const id = await q.enqueue(1);
    const job = await claimSoon(q);
    const writes = [job.progress(1), job.progress(2), job.progress(3)];
    expect(await job.ack()).toBe(true);
    expect(await Promise.all(writes)).toEqual([true, true, true]);
    const info = (await q.getJob(id))!;
    expect([info.state, info.progress]).toEqual(['completed', 3]);
  });

  it('resolves without waiting for a write: the first value and a deferred one alike', async () => {
    const q = store().queue(uid('p-now'));
    const id = await q.enqueue(1);
    const job = await claimSoon(q);
    const first = job.progress('first');
    expect(await settledThisTurn(first)).toBe(true);
    const second = job.progress('second');
    // The deferred value waits for the end of the window; the call does not.
    expect(await settledThisTurn(second)).toBe(true);
    expect([await first, await second]).toEqual([true, true]);
    await landed(q, id, 'second');
  });

  it('a deferred value is written at the end of its window while the job still runs', async () => {
    const q = store().queue(uid('p-trail'));
    const id = await q.enqueue(1);
    const job = await claimSoon(q);
    await job.progress('first');
    expect(await job.progress('second')).toBe(true);
    const info = await landed(q, id, 'second');
    expect(info.state).toBe('processing');
  });

  it("a retry clears the attempt's progress; the value reported last survives a dead letter", async () => {
    const q = store().queue(uid('p-retry'));
    const id = await q.enqueue(1, { maxAttempts: 2 });
    const first = await claimSoon(q);
    void first.progress('a');
    void first.progress('b');
    await first.retry(new Error('x'), 0);
    expect((await q.getJob(id))!.progress).toBeUndefined();
    const second = await claimSoon(q);
    expect((await q.getJob(id))!.progress).toBeUndefined();
    void second.progress('c');
    void second.progress('d');
    // The last attempt's retry dead-letters the job, with its last value.
    await second.retry(new Error('y'), 0);
    const info = (await q.getJob(id))!;
    expect([info.state, info.progress]).toEqual(['dead', 'd']);
  });

  it('a dead job keeps its last value; redriven, its next attempt starts with none', async () => {
    const q = store().queue(uid('p-fail'));
    const id = await q.enqueue(1, { maxAttempts: 3 });
    const job = await claimSoon(q);
    void job.progress('x');
    void job.progress('y');
    await job.fail(new Error('gone'));
    expect((await q.getJob(id))!.progress).toBe('y');
    expect(await q.retryDead([id])).toMatchObject({ moved: 1 });
    await claimSoon(q);
    const info = (await q.getJob(id))!;
    expect([info.state, info.progress]).toEqual(['processing', undefined]);
  });

  it('an attempt whose lease lapsed leaves no progress to the next one', async () => {
    const q = store().queue(uid('p-lapse'));
    const id = await q.enqueue(1);
    const old = await claimSoon(q, 'old', 3000);
    await old.progress(70);
    await landed(q, id, 70);
    await waitFor('the lapsed job reclaimed', () => q.claimOne('new'), 10_000, 20);
    const info = (await q.getJob(id))!;
    expect([info.state, info.attempts, info.progress]).toEqual(['processing', 2, undefined]);
  });

  it('a handler of a QueueWorker reports progress that stays readable after the job completes', async () => {
    const name = uid('p-worker');
    const seen = deferred<number>();
    const w = startWorker(env.other, name, async (job) => {
      await job.progress({ step: 1 });
      seen.resolve(job.id);
      return 'ok';
    });
    try {
      const id = await store().queue(name).enqueue(1);
      expect(await seen.promise).toBe(id);
      const info = await waitFor('the job completed', async () => {
        const j = await store().queue(name).getJob(id);
        return j?.state === 'completed' ? j : null;
      });
      expect([info.progress, info.result]).toEqual([{ step: 1 }, 'ok']);
    } finally {
      await w.stop();
    }
  });

  it('refuses a value over the limit or not JSON before any write, per the conformance vectors', async () => {
    const q = store().queue(uid('p-limit'));
    const id = await q.enqueue(1);
    const job = await claimSoon(q);
    expect(await job.progress('x'.repeat(vectors.progressLimit.acceptStringOfLength))).toBe(true);
    const err = await expectError(
      () => job.progress('x'.repeat(vectors.progressLimit.refuseStringOfLength)),
      PayloadTooLarge,
    );
    expect(err.message).toContain('progress');
    await expectError(() => job.progress({ n: 1n }), Codec);
    await expectError(() => job.progress(undefined), Codec);
    await landed(q, id, 'x'.repeat(vectors.progressLimit.acceptStringOfLength));
  });

  it('resolves false once a write found the claim lost, and writes nothing after', async () => {
    const q = store().queue(uid('p-lost'));
    const id = await q.enqueue(1);
    const old = await claimSoon(q, 'old', 50);
    await waitFor('the lapsed job reclaimed', () => q.claimOne('new'), 10_000, 20);
    // The call resolves at once; its write in the background finds the claim gone.
    await old.progress(1);
    await waitFor('a progress call that knows the claim is lost', async () => !(await old.progress(2)));
    expect((await q.getJob(id))!.progress).toBeUndefined();
  });
}
