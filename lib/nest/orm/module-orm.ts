import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { openTypeOrm } from '../../adapters/typeorm.js';
import { InvalidOption } from '../../contract/errors.js';
import type { TxOpen } from '../../contract/types.js';
import { loadPeer } from '../../internal/load-peer.js';
import { ALKSTORE_MODULE_OPTIONS } from '../alkstore.constants.js';
import type { AlkstoreModuleOptions } from '../interfaces/alkstore-options.interface.js';
import { sameDatabase } from './same-database.js';

/**
 * The `open` of the module's ORM, which the `'orm'` transactions of `@InboxHandler`, `@InboxEvent`
 * and `AlkstoreWorkflowsModule` join: the module's `orm` option, or by default TypeORM's on the
 * module's `dataSource`, else on the application's default DataSource registered by `@nestjs/typeorm`,
 * looked up at the first transaction, provided it is on the database `url` names (else the alkstore
 * rows would land elsewhere). Without any, the transaction is refused with `InvalidOption` naming the
 * ways to provide one, before anything is written.
 */
@Injectable()
export class ModuleOrm {
  private resolved: Promise<TxOpen<unknown>> | null = null;

  constructor(
    @Inject(ALKSTORE_MODULE_OPTIONS) private readonly options: AlkstoreModuleOptions,
    private readonly moduleRef: ModuleRef,
  ) {}

  /** The module's ORM's open, resolved at its first transaction. */
  readonly open: TxOpen<unknown> = async (body, ctx) => (await this.resolve())(body, ctx);

  private resolve(): Promise<TxOpen<unknown>> {
    if (!this.resolved) {
      const pending = this.lookUp();
      // A refusal is not cached: the next call looks again.
      pending.catch(() => {
        if (this.resolved === pending) this.resolved = null;
      });
      this.resolved = pending;
    }
    return this.resolved;
  }

  private async lookUp(): Promise<TxOpen<unknown>> {
    if (this.options.orm) return this.options.orm;
    return openTypeOrm(await this.dataSource()) as TxOpen<unknown>;
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
        'orm',
        'is not set and the application registers no TypeORM DataSource, so there is no ORM transaction to join: ' +
          'set AlkstoreModule.forRootAsync({ inject: [PrismaService], useFactory: (prisma) => ({ url, orm: openPrisma(prisma) ' +
          "}) }) with your ORM's open from nestjs-alkstore, import TypeOrmModule.forRoot(…) on the same database, " +
          "or use the store's own transaction (transaction: 'store')",
      );
    }
    if (this.options.url !== undefined && !sameDatabase(this.options.url, found)) {
      throw new InvalidOption(
        'dataSource',
        "of the application (TypeOrmModule) is not on the database named by AlkstoreModule's url, so a " +
          'transaction could not cover both; point both at one database, or pass the DataSource to AlkstoreModule.forRootAsync instead of a url',
      );
    }
    return found;
  }
}
