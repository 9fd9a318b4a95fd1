import { describe, expect, it } from '@jest/globals';
import { InvalidFlow } from '../../lib/contract/errors.js';
import type { Job, Queue, Store } from '../../lib/contract/types.js';
import { QueueWorker } from '../../lib/worker/queue-worker.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';
import { claimSoon, quiet } from './results-fixtures.js';

/** Claims one job of `q` now (null when nothing is claimable). */
function claimNow(q: Queue): Promise<Job | null> {
  return q.claimOne('w');
}

/** Claims and acks jobs of `q` with `result(job)` until `n` were acked. */
async function ackAll(
  q: Queue,
  n: number,
  result: (job: Job) => unknown = (j) => ({ from: j.payload }),
): Promise<number[]> {
  const ids: number[] = [];
  while (ids.length < n) {
    const job = await claimSoon(q);
    expect(await job.ack(result(job))).toBe(true);
    ids.push(job.id);
  }
  return ids;
}

/** Job flows (SPEC §11, docs/flows.md): a job with dependencies runs once every one is acked. */
export function flowsContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('enqueueFlow', () => {
    it('holds the parent as waiting-children until every child is acked, then it is claimable and reads their results', async () => {
      const q = store().queue(uid('f'));
      const flow = await q.enqueueFlow({ payload: 'parent', children: [{ payload: 'a' }, { payload: 'b' }] });
      expect(flow.children.map((c) => c.queue)).toEqual([q.name, q.name]);
      const parent = (await env.other.queue(q.name).getJob(flow.id))!;
      expect(parent.state).toBe('waiting-children');
      expect(parent.pendingDependencies).toBe(2);
      const first = (await claimSoon(q))!;
      expect(first.payload).not.toBe('parent');
      expect(await first.ack({ got: first.payload })).toBe(true);
      expect((await q.getJob(flow.id))!.pendingDependencies).toBe(1);
      const second = (await claimNow(q))!;
      expect(second.payload).not.toBe('parent');
      // Not claimable while one child is still processing.
      expect(await claimNow(q)).toBeNull();
      expect(await second.ack({ got: second.payload })).toBe(true);
      expect((await q.getJob(flow.id))!.state).toBe('pending');
      const p = (await claimSoon(q))!;
      expect(p.id).toBe(flow.id);
      const results = await p.childResults();
      expect(results.map((r) => [r.id, r.state, r.result])).toEqual(
        [flow.children[0]!.id, flow.children[1]!.id]
          .sort((a, b) => a - b)
          .map((id) => [id, 'completed', { got: id === flow.children[0]!.id ? 'a' : 'b' }]),
      );
      expect(await p.ack('done')).toBe(true);
    });

    it('runs nested children on other queues bottom-up', async () => {
      const top = store().queue(uid('f-top'));
      const mid = store().queue(uid('f-mid'));
      const leaf = store().queue(uid('f-leaf'));
      const flow = await top.enqueueFlow({
        payload: 'top',
        children: [{ queue: mid.name, payload: 'mid', children: [{ queue: leaf.name, payload: 'leaf' }] }],
      });
      expect(flow.children[0]!.queue).toBe(mid.name);
      expect(flow.children[0]!.children[0]!.queue).toBe(leaf.name);
      expect(await claimNow(top)).toBeNull();
      expect(await claimNow(mid)).toBeNull();
      await ackAll(leaf, 1, () => 7);
      const m = await claimSoon(mid);
      expect(await m.childResults()).toEqual([
        { id: flow.children[0]!.children[0]!.id, queue: leaf.name, state: 'completed', result: 7 },
      ]);
      expect(await claimNow(top)).toBeNull();
      await m.ack(8);
      const t = await claimSoon(top);
      expect((await t.childResults()).map((r) => r.result)).toEqual([8]);
    });

    it('unblocks both parents of a shared dependency (a DAG), once each', async () => {
      const q = store().queue(uid('f-dag'));
      const flow = await q.enqueueFlow({
        payload: 'root',
        children: [
          { payload: 'p1', children: [{ payload: 'shared', ref: 's' }] },
          { payload: 'p2', dependsOn: ['s'] },
        ],
      });
      const sharedId = flow.children[0]!.children[0]!.id;
      expect((await q.getJob(flow.children[1]!.id))!.state).toBe('waiting-children');
      const s = await claimSoon(q);
      expect(s.id).toBe(sharedId);
      expect(await claimNow(q)).toBeNull();
      await s.ack('S');
      const a = await claimSoon(q);
      const b = (await claimNow(q))!;
      expect([a.id, b.id].sort((x, y) => x - y)).toEqual(
        [flow.children[0]!.id, flow.children[1]!.id].sort((x, y) => x - y),
      );
      expect(await a.childResults()).toEqual([{ id: sharedId, queue: q.name, state: 'completed', result: 'S' }]);
      expect(await claimNow(q)).toBeNull();
      await a.ack(1);
      await b.ack(2);
      expect((await claimSoon(q)).id).toBe(flow.id);
    });

    it('wakes a worker of the parent queue when the last child is acked (no poll: the idle poll is a minute)', async () => {
      const parents = store().queue(uid('f-wake-p'));
      const kids = store().queue(uid('f-wake-c'));
      const seen: unknown[] = [];
      const worker = new QueueWorker({
        queue: env.other.queue(parents.name),
        name: 'flow parents',
        concurrency: 1,
        idlePollIntervalMs: 60_000,
        drainTimeoutMs: 2000,
        workerId: 'wp',
        logger: quiet,
        handler: async (job) => {
          seen.push((await job.childResults()).map((r) => r.result));
          return 'ok';
        },
      });
      worker.start();
      try {
        const flow = await parents.enqueueFlow({ payload: 'p', children: [{ queue: kids.name, payload: 1 }] });
        await ackAll(kids, 1, () => 'kid');
        await waitFor('the parent handled', () => seen.length > 0, 15_000);
        expect(seen).toEqual([['kid']]);
        expect(
          await waitFor(
            'the parent completed',
            async () => ((await parents.getJob(flow.id))?.state === 'completed' ? true : null),
            15_000,
          ),
        ).toBe(true);
      } finally {
        await worker.stop();
      }
    });

    it('queue.ackBatch of children settles their parent like job.ack', async () => {
      const q = store().queue(uid('f-batch'));
      const flow = await q.enqueueFlow({ payload: 'p', children: [{ payload: 'a' }, { payload: 'b' }] });
      const kids = await q.claimBatch(10, 'w');
      expect(kids.map((k) => k.payload).sort()).toEqual(['a', 'b']);
      expect(await q.ackBatch(kids)).toBe(2);
      expect((await claimSoon(q)).id).toBe(flow.id);
    });

    it('commits with the caller transaction, or not at all', async () => {
      const q = store().queue(uid('f-tx'));
      await expect(
        store().withTx(async (tx) => {
          await tx.enqueueFlow(q.name, { payload: 'p', children: [{ payload: 'c' }] });
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect(await claimNow(q)).toBeNull();
      const flow = await store().withTx((tx) => tx.enqueueFlow(q.name, { payload: 'p', children: [{ payload: 'c' }] }));
      expect((await q.getJob(flow.id))!.state).toBe('waiting-children');
      await ackAll(q, 1);
      expect((await claimSoon(q)).id).toBe(flow.id);
    });
  });

  describe('dependsOn', () => {
    it('waits for existing jobs of any queue; a dependency already completed counts as done', async () => {
      const a = store().queue(uid('d-a'));
      const b = store().queue(uid('d-b'));
      const doneId = await a.enqueue('early');
      await ackAll(a, 1, () => 'E');
      const liveId = await b.enqueue('late');
      const id = await a.enqueue('parent', { dependsOn: [doneId, liveId] });
      expect((await a.getJob(id))!.pendingDependencies).toBe(1);
      expect(await claimNow(a)).toBeNull();
      await ackAll(b, 1, () => 'L');
      const p = await claimSoon(a);
      expect(p.id).toBe(id);
      expect((await p.childResults()).map((r) => [r.id, r.result])).toEqual([
        [doneId, 'E'],
        [liveId, 'L'],
      ]);
    });

    it('works inside a transaction (tx.enqueue with dependsOn)', async () => {
      const q = store().queue(uid('d-tx'));
      const dep = await q.enqueue('dep');
      const id = await store().withTx((tx) => tx.enqueue(q.name, 'parent', { dependsOn: [dep] }));
      expect((await q.getJob(id))!.state).toBe('waiting-children');
      await ackAll(q, 1);
      expect((await claimSoon(q)).id).toBe(id);
    });
  });

  describe('refusals, before any write', () => {
    it('refuses a cycle, a self-dependency and an unknown ref with InvalidFlow naming the job', async () => {
      const q = store().queue(uid('bad'));
      const cycle = await expectError(
        () =>
          q.enqueueFlow({
            payload: 0,
            children: [
              { payload: 1, ref: 'x', dependsOn: ['y'] },
              { payload: 2, ref: 'y', dependsOn: ['x'] },
            ],
          }),
        InvalidFlow,
      );
      expect(cycle.message).toContain('cycle');
      const self = await expectError(
        () => q.enqueueFlow({ payload: 0, children: [{ payload: 1, ref: 'me', dependsOn: ['me'] }] }),
        InvalidFlow,
      );
      expect(self.message).toContain('flow.children[0].dependsOn[0]');
      const unknown = await expectError(() => q.enqueueFlow({ payload: 0, dependsOn: ['nope'] }), InvalidFlow);
      expect(unknown.message).toContain('"nope"');
      expect((await q.stats()).pending).toBe(0);
    });

    it('refuses a missing and a dead dependency id, naming it, and writes nothing', async () => {
      const q = store().queue(uid('bad-id'));
      const deadId = await q.enqueue('x', { maxAttempts: 1 });
      await (await claimSoon(q)).fail(new Error('boom'));
      const missing = await expectError(() => q.enqueue('p', { dependsOn: [987_654_321] }), InvalidFlow);
      expect(missing.code).toBe('INVALID_FLOW');
      expect(missing.message).toContain('987654321');
      const dead = await expectError(
        () => q.enqueueFlow({ payload: 'p', children: [{ payload: 'c' }], dependsOn: [deadId] }),
        InvalidFlow,
      );
      expect(dead.message).toContain(`dependsOn ${deadId}`);
      expect(dead.message).toContain('dead');
      const s = await q.stats();
      expect([s.pending, s.processing, s.dead]).toEqual([0, 0, 1]);
    });

    it('refuses dependsOn on enqueueMany and enqueueBulk', async () => {
      const q = store().queue(uid('bad-many'));
      await expectError(() => q.enqueueMany([1], { dependsOn: [1] }), Error);
      await expectError(() => q.enqueueBulk([{ payload: 1, opts: { dependsOn: [1] } }]), Error);
    });
  });

  describe('onChildDead', () => {
    it("'fail' (default): the parent ends dead naming the child, and so does its own parent", async () => {
      const q = store().queue(uid('p-fail'));
      const flow = await q.enqueueFlow({
        payload: 'top',
        children: [{ payload: 'mid', children: [{ payload: 'leaf', opts: { maxAttempts: 1 } }] }],
      });
      const leaf = await claimSoon(q);
      await leaf.fail(new Error('disk full'));
      const mid = (await q.getJob(flow.children[0]!.id))!;
      expect(mid.state).toBe('dead');
      expect(mid.lastError).toContain(`dependency job ${leaf.id}`);
      expect(mid.lastError).toContain('disk full');
      const top = (await q.getJob(flow.id))!;
      expect(top.state).toBe('dead');
      expect(top.lastError).toContain(`dependency job ${mid.id}`);
      expect(await claimNow(q)).toBeNull();
      const s = await q.stats();
      expect([s.pending, s.processing, s.dead]).toEqual([0, 0, 3]);
    });

    it("'ignore': a dead child counts as done, its result missing", async () => {
      const q = store().queue(uid('p-ignore'));
      const flow = await q.enqueueFlow({
        payload: 'p',
        onChildDead: 'ignore',
        children: [{ payload: 'ok' }, { payload: 'bad', opts: { maxAttempts: 1 } }],
      });
      for (let i = 0; i < 2; i++) {
        const c = await claimSoon(q);
        if (c.payload === 'bad') await c.fail(new Error('nope'));
        else await c.ack('fine');
      }
      const p = await claimSoon(q);
      expect(p.id).toBe(flow.id);
      expect((await p.childResults()).map((r) => [r.state, r.result])).toEqual([['completed', 'fine']]);
    });

    it("'continue': the parent runs and sees which children failed, cancelled ones included", async () => {
      const q = store().queue(uid('p-continue'));
      const flow = await q.enqueueFlow({
        payload: 'p',
        onChildDead: 'continue',
        children: [{ payload: 'ok' }, { payload: 'bad', opts: { maxAttempts: 1 } }, { payload: 'gone' }],
      });
      expect(await q.cancel(flow.children[2]!.id)).toBe(true);
      for (let i = 0; i < 2; i++) {
        const c = await claimSoon(q);
        if (c.payload === 'bad') await c.fail(new Error('nope'));
        else await c.ack('fine');
      }
      const p = await claimSoon(q);
      expect(p.id).toBe(flow.id);
      expect(await p.childResults()).toEqual([
        { id: flow.children[0]!.id, queue: q.name, state: 'completed', result: 'fine' },
        { id: flow.children[1]!.id, queue: q.name, state: 'dead', error: 'nope' },
        { id: flow.children[2]!.id, queue: q.name, state: 'cancelled' },
      ]);
    });
  });

  describe('sweep repair', () => {
    it('settles a death no handle saw (a child expired by the sweep, one cancelled by key): the parent applies its policy', async () => {
      const q = store().queue(uid('sweep'));
      const flow = await q.enqueueFlow({ payload: 'p', children: [{ payload: 'c', opts: { expiresInMs: 1 } }] });
      await waitFor('the parent failed by the sweep', async () => {
        await q.sweepExpired();
        return (await q.getJob(flow.id))?.state === 'dead';
      });
      expect((await q.getJob(flow.id))!.lastError).toContain(`dependency job ${flow.children[0]!.id}`);
      const other = await q.enqueueFlow({
        payload: 'p2',
        onChildDead: 'ignore',
        children: [{ payload: 'k', opts: { uniqueKey: 'sweep-k' } }],
      });
      expect(await q.cancelByKey('sweep-k')).toBe(true);
      expect((await q.getJob(other.id))!.state).toBe('waiting-children');
      await q.sweepExpired();
      expect((await claimSoon(q)).id).toBe(other.id);
    });
  });

  describe('cancelFlow', () => {
    it('cancels the parent and every unfinished descendant; a running child loses its claim', async () => {
      const q = store().queue(uid('cf'));
      const kids = store().queue(uid('cf-kids'));
      const flow = await q.enqueueFlow({
        payload: 'p',
        children: [
          { queue: kids.name, payload: 'run' },
          { queue: kids.name, payload: 'wait', children: [{ queue: kids.name, payload: 'deep' }] },
        ],
      });
      const running = await claimSoon(kids);
      const cancels = kids.listenCancels();
      try {
        expect(await q.cancelFlow(flow.id)).toBe(4);
        await waitFor('a cancel wake', async () => (await cancels[Symbol.asyncIterator]().next()).done === false);
      } finally {
        cancels.close();
      }
      expect(await running.ack('late')).toBe(false);
      expect((await q.getJob(flow.id))!.state).toBe('cancelled');
      const states = [];
      for (const c of [flow.children[0]!, flow.children[1]!, flow.children[1]!.children[0]!])
        states.push((await kids.getJob(c.id))?.state ?? null);
      expect(states).toEqual(['cancelled', 'cancelled', 'cancelled']);
      expect(await claimNow(kids)).toBeNull();
      expect(await claimNow(q)).toBeNull();
    });
  });
}
