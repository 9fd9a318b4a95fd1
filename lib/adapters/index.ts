/**
 * Join your ORM's transaction: alkstore's queue, outbox, stream and notify writes commit with your
 * business writes or vanish with them. One helper per ORM, each an optional peer loaded lazily:
 * `pgTransaction`, `drizzleTransaction`, `kyselyTransaction`, `knexTransaction`, `prismaTransaction`
 * (TypeORM: `runTransaction` in `alkstore/nest`).
 */
export * from './pg.js';
export * from './drizzle.js';
export * from './kysely.js';
export * from './knex.js';
export * from './prisma.js';
export type { AdapterResult, Joined } from './runner.js';
