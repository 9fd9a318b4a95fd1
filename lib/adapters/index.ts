/**
 * Join your ORM's transaction: `store.joinTransaction(open, fn)` with the `open` of your ORM, and
 * alkstore's queue, outbox, stream and notify writes commit with your business writes or vanish
 * with them. One `open` per ORM, each an optional peer loaded lazily (docs/transactions.md).
 */
export { openTypeOrm } from './typeorm.js';
export {
  openPrisma,
  type PrismaClientLike,
  type PrismaTransactionOptions,
  type PrismaTxLike,
  type PrismaTxOf,
} from './prisma.js';
export {
  openDrizzle,
  type DrizzlePgDatabaseLike,
  type DrizzleSqliteDatabaseLike,
  type DrizzleTxOf,
} from './drizzle.js';
export { openKysely } from './kysely.js';
export { openKnex } from './knex.js';
export { openPg } from './pg.js';
