import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { InvalidOption } from '../../contract/errors.js';
import type { TxOps } from '../../contract/types.js';
import { ALKSTORE_MODULE_OPTIONS } from '../alkstore.constants.js';
import type { AlkstoreModuleOptions } from '../interfaces/alkstore-options.interface.js';
import { Store } from '../store.token.js';
import type { AlkstoreOrmAdapter, OrmHandleOf } from './orm-adapter.js';

/**
 * Runs a transaction of the ORM named by `AlkstoreModule.forRoot({ orm })` with the store joined:
 * `orm.run(async (tx, handle) => …)`, where `handle` is the ORM's transaction (Prisma's `prismaTx`,
 * Drizzle's `tx`, Kysely's or knex's `trx`, a `pg` `PoolClient`). Name the adapter in the type for
 * a typed handle: `OrmTransactions<ReturnType<typeof prismaAdapter<PrismaService>>>`. TypeORM
 * applications use `AlkstoreTransactions`.
 */
@Injectable()
export class OrmTransactions<A extends AlkstoreOrmAdapter<unknown> = AlkstoreOrmAdapter<unknown>> {
  private client: unknown;

  constructor(
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly options: AlkstoreModuleOptions,
    private readonly store: Store,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** Runs `fn` in a transaction of the ORM's client, with `tx` joined to it. */
  run<T>(fn: (tx: TxOps, handle: OrmHandleOf<A>) => Promise<T>): Promise<T> {
    const adapter = this.options.orm as A | undefined;
    if (!adapter) {
      return Promise.reject(
        new InvalidOption(
          'orm',
          'is not set, so OrmTransactions has no ORM to open a transaction with: AlkstoreModule.forRoot({ …, orm: prismaAdapter(PrismaService) }) (or drizzleAdapter, kyselyAdapter, knexAdapter, pgAdapter with the token of your client); TypeORM uses AlkstoreTransactions',
        ),
      );
    }
    if (this.client === undefined) {
      let found: unknown;
      try {
        found = this.moduleRef.get(adapter.clientToken, { strict: false });
      } catch {
        found = undefined;
      }
      if (found === undefined || found === null) {
        return Promise.reject(
          new InvalidOption(
            'orm.clientToken',
            `names no provider of this application; provide your ${adapter.orm} client under that token (or pass the token you provide it under)`,
          ),
        );
      }
      this.client = found;
    }
    return adapter.run(this.client, this.store, fn as (tx: TxOps, handle: unknown) => Promise<T>);
  }
}
