import type { DataSource, EntityManager } from 'typeorm';
import type { Store, TxOps } from '../../contract/types.js';

/**
 * Runs `fn` in a TypeORM transaction with the store joined to it:
 * `dataSource.transaction(em => fn(store.withTx(em), em))`. Business writes
 * through `em` and alkstore writes through `tx` (enqueue, outboxEnqueue,
 * publish, notify, saveOffset) commit together or roll back together; wakes
 * fire only on commit. It is `store.joinTransaction((body) => dataSource.transaction(body), fn)`:
 * on SQLite, such transactions of one store run one at a time through its write path (TypeORM
 * runs every SQLite transaction on one connection and does not serialize them itself).
 *
 * ```ts
 * await runTransaction(dataSource, store, async (tx, em) => {
 *   const order = await em.save(Order, { customer });
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function runTransaction<T>(
  dataSource: DataSource,
  store: Store,
  fn: (tx: TxOps, em: EntityManager) => Promise<T>,
): Promise<T> {
  return store.joinTransaction<EntityManager, T>((body) => dataSource.transaction(body), fn);
}
