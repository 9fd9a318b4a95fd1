import type { DataSource, EntityManager } from 'typeorm';
import type { Store, TxOps } from '../../contract/types.js';

/**
 * Runs `fn` in a TypeORM transaction with the store joined to it:
 * `dataSource.transaction(em => fn(store.withTx(em), em))`. Business writes
 * through `em` and alkstore writes through `tx` (enqueue, outboxEnqueue,
 * publish, notify, saveOffset) commit together or roll back together; wakes
 * fire only on commit.
 *
 * ```ts
 * await runTransaction(dataSource, store, async (tx, em) => {
 *   const order = await em.save(Order, { customer });
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function runTransaction<T>(dataSource: DataSource, store: Store, fn: (tx: TxOps, em: EntityManager) => Promise<T>): Promise<T> {
  return dataSource.transaction((em) => fn(store.withTx(em), em));
}
