import { Inject, Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { InvalidOption } from '../../contract/errors.js';
import type { TxOps } from '../../contract/types.js';
import { ALKSTORE_MODULE_OPTIONS } from '../alkstore.constants.js';
import type { AlkstoreModuleOptions } from '../interfaces/alkstore-options.interface.js';
import { Store } from '../store.token.js';
import { runTransaction } from './run-transaction.js';

/**
 * Injectable form of {@link runTransaction} over the module's `dataSource`:
 * `transactions.run(async (tx, em) => …)`. Needs `AlkstoreModule.forRoot({ dataSource })`.
 */
@Injectable()
export class AlkstoreTransactions {
  constructor(
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly options: AlkstoreModuleOptions,
    private readonly store: Store,
  ) {}

  /** Runs `fn` in a TypeORM transaction on the module's DataSource, with `tx` joined to it. */
  run<T>(fn: (tx: TxOps, em: EntityManager) => Promise<T>): Promise<T> {
    const dataSource = this.options.dataSource;
    if (!dataSource) {
      return Promise.reject(new InvalidOption('dataSource', 'is not set on AlkstoreModule; AlkstoreTransactions needs it (or call runTransaction(dataSource, store, fn))'));
    }
    return runTransaction(dataSource, this.store, fn);
  }
}
