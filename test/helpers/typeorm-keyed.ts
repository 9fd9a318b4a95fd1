import { expect } from '@jest/globals';
import type { DataSource } from 'typeorm';
import type { Store } from '../../lib/contract/types.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';

/**
 * Shared by both engines' TypeORM seam tests: keyed enqueues (uniqueKey,
 * orderingKey, headers) through a joined TypeORM transaction (`store.joinTransaction` with
 * `openTypeOrm`) behave as through the store.
 */
export async function keyedEnqueuesThroughJoinedTx(ds: DataSource, store: Store): Promise<void> {
  const first = await store.joinTransaction(openTypeOrm(ds), async (ops) => {
    const a = await ops.enqueue('tx-keyed', { v: 1 }, { uniqueKey: 'u', headers: { 'correlation-id': 'c-9' } });
    expect(await ops.enqueue('tx-keyed', { v: 2 }, { uniqueKey: 'u' })).toBe(a);
    expect(
      await ops.enqueue(
        'tx-keyed',
        { v: 3 },
        { uniqueKey: 'u', onConflict: 'replace', headers: { 'correlation-id': 'c-10' } },
      ),
    ).toBe(a);
    await ops.enqueue('tx-keyed', 'o1', { orderingKey: 'o' });
    await ops.enqueue('tx-keyed', 'o2', { orderingKey: 'o' });
    await ops.outboxEnqueue('tx-keyed-outbox', 'm', { uniqueKey: 'm', headers: { h: '1' } });
    return a;
  });
  const q = store.queue('tx-keyed');
  expect(await q.getJobByKey('u')).toMatchObject({
    id: first,
    payload: { v: 3 },
    headers: { 'correlation-id': 'c-10' },
  });
  // A later transaction finds the committed holder.
  expect(
    await store.joinTransaction(openTypeOrm(ds), (tx) => tx.enqueue('tx-keyed', { v: 4 }, { uniqueKey: 'u' })),
  ).toBe(first);
  const claimed = await q.claimBatch(10, 'w');
  expect(claimed.map((j) => j.payload)).toEqual([{ v: 3 }, 'o1']);
  expect((await store.outbox('tx-keyed-outbox').queue.getJobByKey('m'))!.headers).toEqual({ h: '1' });
}
