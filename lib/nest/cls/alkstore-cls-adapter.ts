import type { TransactionalAdapter, TransactionalAdapterOptions } from '@nestjs-cls/transactional';
import type { Store, TxOpen, TxOps } from '../../contract/types.js';
import { whileActive } from '../../adapters/runner.js';
import { Store as StoreToken } from '../store.token.js';
import { clsJoined } from './cls-join.js';

/** alkstore's operations of each CLS transaction client the adapter opened (and of its nested ones). */
export const clsTxOps = new WeakMap<object, TxOps>();

/** Options of {@link AlkstoreTransactionalAdapter}. */
export interface AlkstoreTransactionalAdapterOptions<TConnection, TTx, TOptions> {
  /** The ORM's own `@nestjs-cls/transactional` adapter (e.g. `new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource })`). */
  readonly adapter: TransactionalAdapter<TConnection, TTx, TOptions>;
}

/**
 * A `@nestjs-cls/transactional` adapter that wraps your ORM's adapter and joins the store to every
 * transaction it opens: each one is `store.joinTransaction(open, …)` with the wrapped adapter's
 * transaction as `open`, and alkstore runs its SQL on the transaction client the way the ORM's
 * `open` of `nestjs-alkstore` does (TypeORM, Prisma, Drizzle: told apart by the client itself).
 * Inside a `@Transactional()` method,
 * `AlkstoreClsTx.enqueue` / `outboxEnqueue` / `notify` / `publish` write in that transaction; outside
 * one they write as the store does. On SQLite the CLS transactions then go one at a time through the
 * store's write path, like every joined transaction.
 *
 * ```ts
 * ClsModule.forRoot({
 * plugins: [new ClsPluginTransactional({ imports: [TypeOrmModule], adapter: new
 * AlkstoreTransactionalAdapter({ adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }) })
 * })],
 * });
 * ```
 */
export class AlkstoreTransactionalAdapter<TConnection, TTx, TOptions> implements TransactionalAdapter<
  TConnection,
  TTx,
  TOptions
> {
  readonly connectionToken: unknown;
  readonly connection?: TConnection;
  readonly defaultTxOptions?: Partial<TOptions>;
  readonly extraProviderTokens: NonNullable<TransactionalAdapter<TConnection, TTx, TOptions>['extraProviderTokens']>;
  readonly supportsTransactionProxy?: boolean;
  readonly optionsFactory: TransactionalAdapter<TConnection, TTx, TOptions>['optionsFactory'];

  constructor(options: AlkstoreTransactionalAdapterOptions<TConnection, TTx, TOptions>) {
    const inner = options.adapter;
    this.connectionToken = inner.connectionToken;
    this.connection = inner.connection;
    this.defaultTxOptions = inner.defaultTxOptions;
    this.supportsTransactionProxy = inner.supportsTransactionProxy;
    const innerExtra = inner.extraProviderTokens ?? [];
    this.extraProviderTokens = [...innerExtra, StoreToken];
    this.optionsFactory = (connection, extraProviders: unknown[]): TransactionalAdapterOptions<TTx, TOptions> => {
      const store = extraProviders[innerExtra.length] as Store;
      const base = inner.optionsFactory(connection, extraProviders.slice(0, innerExtra.length));
      const wrapped: TransactionalAdapterOptions<TTx, TOptions> = {
        getFallbackInstance: () => base.getFallbackInstance(),
        wrapWithTransaction: (txOptions, fn, setTx) => {
          let client: TTx | undefined;
          // The wrapped adapter's transaction, as the open the store joins.
          const open: TxOpen<unknown> = (body, ctx) =>
            base.wrapWithTransaction(
              txOptions,
              () => whileActive(async (isActive) => body(await clsJoined(client, isActive, ctx.engine))),
              (c?: TTx) => {
                client = c;
                setTx(c);
              },
            );
          return store.joinTransaction(open, (tx) => {
            if (client !== undefined && client !== null) clsTxOps.set(client as object, tx);
            return fn() as Promise<unknown>;
          });
        },
      };
      if (base.wrapWithNestedTransaction) {
        const nested = base.wrapWithNestedTransaction.bind(base);
        // A nested (savepoint) transaction runs on the outer one's connection: the same alkstore operations, inside the savepoint.
        wrapped.wrapWithNestedTransaction = (txOptions, fn, setTx, outer) =>
          nested(
            txOptions,
            fn,
            (c?: TTx) => {
              const ops = clsTxOps.get(outer as object);
              if (c !== undefined && c !== null && ops) clsTxOps.set(c as object, ops);
              setTx(c);
            },
            outer,
          );
      }
      return wrapped;
    };
  }
}
