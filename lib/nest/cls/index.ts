/**
 * `@nestjs-cls/transactional` support (optional peers `nestjs-cls`, `@nestjs-cls/transactional`):
 * wrap your ORM's adapter (TypeORM, Prisma, Drizzle) in {@link AlkstoreTransactionalAdapter} and
 * write through {@link AlkstoreClsTx} to join the active `@Transactional()` transaction.
 */
export { AlkstoreTransactionalAdapter, type AlkstoreTransactionalAdapterOptions } from './alkstore-cls-adapter.js';
export { AlkstoreClsTx } from './alkstore-cls-tx.service.js';
export {
  DrizzleSqliteTransactionalAdapter,
  type DrizzleSqliteTransactionalAdapterOptions,
  type DrizzleSqliteTransactionOptions,
} from './drizzle-sqlite-adapter.js';
