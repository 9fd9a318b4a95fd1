/**
 * Join your ORM's transaction: alkstore's queue, outbox, stream and notify writes commit with your
 * business writes or vanish with them. One helper per ORM, each an optional peer loaded lazily:
 * `pgTransaction`, `drizzleTransaction`, `kyselyTransaction`, `knexTransaction`, `prismaTransaction`
 * (TypeORM: `runTransaction` in `alkstore/nest`).
 */
export { pgTransaction } from './pg.js';
export {
  drizzleTransaction,
  type DrizzlePgDatabaseLike,
  type DrizzleSqliteDatabaseLike,
  type DrizzleTxOf,
} from './drizzle.js';
export { kyselyTransaction } from './kysely.js';
export { knexTransaction } from './knex.js';
export {
  prismaTransaction,
  type PrismaClientLike,
  type PrismaTransactionOptions,
  type PrismaTxLike,
  type PrismaTxOf,
} from './prisma.js';
export type { AdapterResult, Joined } from './runner.js';
