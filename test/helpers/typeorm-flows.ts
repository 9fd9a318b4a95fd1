import { expect } from '@jest/globals';
import type { DataSource, EntityManager } from 'typeorm';
import { AlkstoreError } from '../../lib/contract/errors.js';
import type { Store, TxOps } from '../../lib/contract/types.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';

/** How a seam test writes and counts its business rows (each engine's placeholders and schema). */
export interface Orders {
  insert(em: EntityManager, note: string): Promise<unknown>;
  count(note: string): Promise<number>;
}

const join = <T>(ds: DataSource, store: Store, fn: (tx: TxOps, em: EntityManager) => Promise<T>): Promise<T> =>
  store.joinTransaction(openTypeOrm(ds), fn);

/**
 * Shared by both engines' TypeORM seam tests: `tx.enqueueFlow` and `tx.enqueue(…, { dependsOn })`
 * inside a joined TypeORM transaction commit with the business row (the parent waits, the children
 * are claimable and wake their queue, the parent runs once they are acked), a rollback leaves none
 * of them, and a bad flow is refused before any write.
 */
export async function flowsThroughJoinedTx(ds: DataSource, store: Store, orders: Orders): Promise<void> {
  const parents = store.queue('tx-flow-parent');
  const children = store.queue('tx-flow-child');
  const wake = children.listen();
  const { flow, later } = await join(ds, store, async (tx, em) => {
    await orders.insert(em, 'flow');
    const flow = await tx.enqueueFlow('tx-flow-parent', {
      payload: 'parent',
      children: [
        { queue: 'tx-flow-child', payload: 'a' },
        { queue: 'tx-flow-child', payload: 'b' },
      ],
    });
    // A dependency on a job of this same transaction, through the enqueue option.
    const later = await tx.enqueue('tx-flow-parent', 'later', { dependsOn: [flow.id] });
    return { flow, later };
  });
  expect(await orders.count('flow')).toBe(1);
  expect(flow.children.map((c) => c.queue)).toEqual(['tx-flow-child', 'tx-flow-child']);
  expect(await wake.recv(AbortSignal.timeout(10_000))).toEqual({ channel: '__alkstore_queue:tx-flow-child' });
  wake.close();
  expect(await parents.getJob(flow.id)).toMatchObject({ state: 'waiting-children', pendingDependencies: 2 });
  expect(await parents.getJob(later)).toMatchObject({ state: 'waiting-children', pendingDependencies: 1 });
  expect(await parents.claimOne('w')).toBeNull();
  const claimed = await children.claimBatch(10, 'w');
  expect(claimed.map((j) => j.payload).sort()).toEqual(['a', 'b']);
  for (const j of claimed) expect(await j.ack(`got ${String(j.payload)}`)).toBe(true);
  const parent = (await parents.claimOne('w'))!;
  expect(parent.id).toBe(flow.id);
  expect((await parent.childResults()).map((r) => r.result).sort()).toEqual(['got a', 'got b']);
  expect(await parent.ack()).toBe(true);
  const next = (await parents.claimOne('w'))!;
  expect(next.id).toBe(later);
  expect(await next.ack()).toBe(true);

  // A rollback leaves no business row, no job, no edge.
  const before = { p: await store.queue('tx-flow-rb').stats(), c: await store.queue('tx-flow-rb-child').stats() };
  await expect(
    join(ds, store, async (tx, em) => {
      await orders.insert(em, 'rolled back flow');
      await tx.enqueueFlow('tx-flow-rb', {
        payload: 'parent',
        children: [{ queue: 'tx-flow-rb-child', payload: 'c' }],
      });
      throw new Error('business failure');
    }),
  ).rejects.toThrow('business failure');
  expect(await orders.count('rolled back flow')).toBe(0);
  expect(await store.queue('tx-flow-rb').stats()).toEqual(before.p);
  expect(await store.queue('tx-flow-rb-child').stats()).toEqual(before.c);
  expect(await store.queue('tx-flow-rb-child').claimOne('w')).toBeNull();

  // Bad flows are refused with InvalidFlow, and write nothing (the business row commits alone).
  const refused = await join(ds, store, async (tx, em) => {
    await orders.insert(em, 'bad flows');
    const errors: unknown[] = [];
    for (const bad of [
      () => tx.enqueueFlow('tx-flow-bad', { payload: 'p', ref: 'x', dependsOn: ['x'] }),
      () => tx.enqueueFlow('tx-flow-bad', { payload: 'p', dependsOn: ['nosuch'] }),
      () => tx.enqueueFlow('tx-flow-bad', { payload: 'p', children: [{ payload: 'c' }], dependsOn: [999_999_999] }),
      () => tx.enqueue('tx-flow-bad', 'p', { dependsOn: [999_999_998] }),
    ]) {
      errors.push(await bad().catch((err: unknown) => err));
    }
    return errors;
  });
  for (const err of refused) {
    expect(err).toBeInstanceOf(AlkstoreError);
    expect((err as AlkstoreError).code).toBe('INVALID_FLOW');
  }
  expect(String((refused[2] as Error).message)).toContain('999999999');
  expect(await orders.count('bad flows')).toBe(1);
  expect(await store.queue('tx-flow-bad').stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
  expect(await store.queue('tx-flow-bad').claimOne('w')).toBeNull();
}
