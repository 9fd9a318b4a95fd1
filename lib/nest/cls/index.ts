/**
 * `@nestjs-cls/transactional` support (optional peers `nestjs-cls`, `@nestjs-cls/transactional`):
 * wrap your ORM's adapter in {@link AlkstoreTransactionalAdapter} (with `join: prismaClsJoin` or
 * `drizzleClsJoin` for Prisma and Drizzle; TypeORM needs none) and write through
 * {@link AlkstoreClsTx} to join the active `@Transactional()` transaction.
 */
export {
  AlkstoreTransactionalAdapter,
  type AlkstoreTransactionalAdapterOptions,
  type ClsJoin,
} from './alkstore-cls-adapter.js';
export { AlkstoreClsTx } from './alkstore-cls-tx.service.js';
export { drizzleClsJoin, prismaClsJoin } from './orm-joins.js';
export {
  DrizzleSqliteTransactionalAdapter,
  type DrizzleSqliteTransactionalAdapterOptions,
  type DrizzleSqliteTransactionOptions,
} from './drizzle-sqlite-adapter.js';
