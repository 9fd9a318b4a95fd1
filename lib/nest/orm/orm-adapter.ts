import type { InjectionToken } from '@nestjs/common';
import type { Knex } from 'knex';
import type { Kysely, Transaction } from 'kysely';
import type { Pool, PoolClient } from 'pg';
import type { Store, TxOps } from '../../contract/types.js';
import {
  drizzleTransaction,
  type DrizzlePgDatabaseLike,
  type DrizzleSqliteDatabaseLike,
  type DrizzleTxOf,
} from '../../adapters/drizzle.js';
import { knexTransaction } from '../../adapters/knex.js';
import { kyselyTransaction } from '../../adapters/kysely.js';
import { pgTransaction } from '../../adapters/pg.js';
import {
  prismaTransaction,
  type PrismaClientLike,
  type PrismaTransactionOptions,
  type PrismaTxOf,
} from '../../adapters/prisma.js';

/**
 * How `OrmTransactions` opens a transaction of your ORM with the store joined: the provider that
 * holds the ORM's client (`clientToken`, looked up in the application at the first `run`) and the
 * `alkstore/adapters` helper for it. Made by `prismaAdapter`, `drizzleAdapter`, `kyselyAdapter`,
 * `knexAdapter` or `pgAdapter`, and passed as `AlkstoreModule.forRoot({ orm })`.
 */
export interface AlkstoreOrmAdapter<H> {
  /** The ORM, for messages. */
  readonly orm: string;
  /** The provider of the ORM's client: `PrismaService`, a Drizzle/Kysely/knex token, a `pg.Pool` token. */
  readonly clientToken: InjectionToken;
  /** Runs `fn` in a transaction of `client` with `store` joined to it. */
  run<T>(client: unknown, store: Store, fn: (tx: TxOps, handle: H) => Promise<T>): Promise<T>;
}

/** A helper with its handle types erased: the adapter checks the client at run time. */
type UntypedHelper<T> = (client: unknown, store: Store, fn: (tx: TxOps, handle: unknown) => Promise<T>) => Promise<T>;

/** The ORM transaction handle an adapter gives `OrmTransactions.run`'s function. */
export type OrmHandleOf<A> = A extends AlkstoreOrmAdapter<infer H> ? H : never;

/** Prisma 7 (`prismaTransaction`): `clientToken` provides the `PrismaClient` (e.g. your `PrismaService`). */
export function prismaAdapter<P extends PrismaClientLike>(
  clientToken: InjectionToken,
  options?: PrismaTransactionOptions,
): AlkstoreOrmAdapter<PrismaTxOf<P>> {
  return { orm: 'Prisma', clientToken, run: (client, store, fn) => prismaTransaction(client as P, store, fn, options) };
}

/** Drizzle on PostgreSQL (`drizzleTransaction`): `clientToken` provides the `drizzle(...)` database. */
export function drizzleAdapter<D extends DrizzlePgDatabaseLike>(
  clientToken: InjectionToken,
): AlkstoreOrmAdapter<DrizzleTxOf<D>>;
/** Drizzle on SQLite (better-sqlite3): the handle is the database itself (see `drizzleTransaction`). */
export function drizzleAdapter<D extends DrizzleSqliteDatabaseLike>(clientToken: InjectionToken): AlkstoreOrmAdapter<D>;
export function drizzleAdapter(clientToken: InjectionToken): AlkstoreOrmAdapter<unknown> {
  return {
    orm: 'Drizzle',
    clientToken,
    run: <T>(client: unknown, store: Store, fn: (tx: TxOps, handle: unknown) => Promise<T>) =>
      (drizzleTransaction as UntypedHelper<T>)(client, store, fn),
  };
}

/** Kysely (`kyselyTransaction`): `clientToken` provides the `Kysely<DB>` instance. */
export function kyselyAdapter<DB>(clientToken: InjectionToken): AlkstoreOrmAdapter<Transaction<DB>> {
  return { orm: 'Kysely', clientToken, run: (client, store, fn) => kyselyTransaction(client as Kysely<DB>, store, fn) };
}

/** knex (`knexTransaction`): `clientToken` provides the `knex(...)` instance. */
export function knexAdapter(clientToken: InjectionToken): AlkstoreOrmAdapter<Knex.Transaction> {
  return { orm: 'knex', clientToken, run: (client, store, fn) => knexTransaction(client as Knex, store, fn) };
}

/** `pg` (`pgTransaction`): `clientToken` provides the `pg.Pool`; the handle is the transaction's `PoolClient`. */
export function pgAdapter(clientToken: InjectionToken): AlkstoreOrmAdapter<PoolClient> {
  return {
    orm: 'pg',
    clientToken,
    run: <T>(client: unknown, store: Store, fn: (tx: TxOps, handle: PoolClient) => Promise<T>) =>
      pgTransaction(client as Pool, store, fn),
  };
}
