import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { DataSource, EntityManager } from 'typeorm';
import { InvalidOption } from '../../contract/errors.js';
import type { TxOps } from '../../contract/types.js';
import { loadPeer } from '../../internal/load-peer.js';
import { ALKSTORE_MODULE_OPTIONS } from '../alkstore.constants.js';
import type { AlkstoreModuleOptions } from '../interfaces/alkstore-options.interface.js';
import { Store } from '../store.token.js';
import { sameDatabase } from './same-database.js';
import { runTransaction } from './run-transaction.js';

/**
 * Injectable form of {@link runTransaction}: `transactions.run(async (tx, em) => …)`
 * runs `fn` in a TypeORM transaction with the store joined to it.
 *
 * The DataSource is the module's `dataSource` option; with `forRoot({ url })`
 * it is the application's default DataSource registered by `@nestjs/typeorm`
 * (`TypeOrmModule.forRoot`), looked up at the first `run`, provided it is on
 * the same database as `url` (else the alkstore rows would land elsewhere).
 * Without either, `run` rejects with {@link InvalidOption}; a store-only
 * transaction needs no DataSource: `store.withTx(async (tx) => …)`.
 */
@Injectable()
export class AlkstoreTransactions {
  private resolved: Promise<DataSource> | null = null;

  constructor(
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly options: AlkstoreModuleOptions,
    private readonly store: Store,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** Runs `fn` in a TypeORM transaction on the DataSource (see the class), with `tx` joined to it. */
  async run<T>(fn: (tx: TxOps, em: EntityManager) => Promise<T>): Promise<T> {
    if (!this.resolved) {
      const pending = this.dataSource();
      // A refusal is not cached: the next call looks again.
      pending.catch(() => {
        if (this.resolved === pending) this.resolved = null;
      });
      this.resolved = pending;
    }
    return runTransaction(await this.resolved, this.store, fn);
  }

  private async dataSource(): Promise<DataSource> {
    if (this.options.dataSource) return this.options.dataSource;
    const { DataSource: DataSourceToken } = await loadPeer('typeorm', () => import('typeorm'));
    let found: DataSource | undefined;
    try {
      found = this.moduleRef.get(DataSourceToken, { strict: false });
    } catch {
      found = undefined;
    }
    if (!found) {
      throw new InvalidOption(
        'dataSource',
        'is not set and the application registers no TypeORM DataSource; AlkstoreTransactions needs one: import TypeOrmModule.forRoot(…) on the same database, or use AlkstoreModule.forRootAsync({ inject: [DataSource], useFactory: (dataSource) => ({ dataSource }) }). A store-only transaction needs none: store.withTx(async (tx) => …)',
      );
    }
    if (this.options.url !== undefined && !sameDatabase(this.options.url, found)) {
      throw new InvalidOption(
        'dataSource',
        "of the application (TypeOrmModule) is not on the database named by AlkstoreModule's url, so a transaction could not cover both; point both at one database, or pass the DataSource to AlkstoreModule.forRootAsync instead of a url",
      );
    }
    return found;
  }
}
