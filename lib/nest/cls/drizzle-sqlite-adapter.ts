import type { TransactionalAdapter, TransactionalAdapterOptions } from '@nestjs-cls/transactional';
import { isDrizzleSqlite, type DrizzleSqliteDatabaseLike } from '../../adapters/drizzle.js';
import { InvalidOption } from '../../contract/errors.js';

/**
 * Options of one transaction of {@link DrizzleSqliteTransactionalAdapter} (`@Transactional({ behavior })`):
 * SQLite's `BEGIN DEFERRED | IMMEDIATE | EXCLUSIVE`.
 */
export interface DrizzleSqliteTransactionOptions {
  behavior?: 'deferred' | 'immediate' | 'exclusive';
}

/** Options of {@link DrizzleSqliteTransactionalAdapter}. */
export interface DrizzleSqliteTransactionalAdapterOptions {
  /** The injection token of your Drizzle better-sqlite3 database (`drizzle(new Database(path))`). */
  readonly drizzleInstanceToken: unknown;
  readonly defaultTxOptions?: Partial<DrizzleSqliteTransactionOptions>;
}

const BEHAVIORS: readonly string[] = ['deferred', 'immediate', 'exclusive'];

function beginStatement(options: DrizzleSqliteTransactionOptions | undefined): string {
  const behavior = options?.behavior;
  if (behavior === undefined) return 'BEGIN';
  if (!BEHAVIORS.includes(behavior)) {
    throw new InvalidOption(
      'behavior',
      `must be one of "deferred", "immediate", "exclusive" (got ${JSON.stringify(String(behavior).slice(0, 40))})`,
    );
  }
  return `BEGIN ${behavior.toUpperCase()}`;
}

/**
 * A `@nestjs-cls/transactional` adapter for Drizzle on better-sqlite3, to wrap in
 * `AlkstoreTransactionalAdapter`. Drizzle's better-sqlite3
 * transactions are synchronous (an `async` callback is refused by better-sqlite3), so this adapter
 * opens the transaction itself on the database's connection: `BEGIN` … `COMMIT`, `ROLLBACK` when
 * the method throws, a savepoint for `Propagation.Nested`. The transaction client is the database
 * itself (its connection is the transaction): write through `txHost.tx`. Wrapped, its transactions
 * of one store run one at a time through the store's write path; do not write through the same
 * database outside a `@Transactional()` method while one is open.
 *
 * ```ts
 * new AlkstoreTransactionalAdapter({ adapter: new DrizzleSqliteTransactionalAdapter({ drizzleInstanceToken: DRIZZLE }) });
 * ```
 */
export class DrizzleSqliteTransactionalAdapter<
  D extends DrizzleSqliteDatabaseLike = DrizzleSqliteDatabaseLike,
> implements TransactionalAdapter<D, D, DrizzleSqliteTransactionOptions> {
  readonly connectionToken: unknown;
  readonly defaultTxOptions?: Partial<DrizzleSqliteTransactionOptions>;
  readonly optionsFactory: (db: D) => TransactionalAdapterOptions<D, DrizzleSqliteTransactionOptions>;

  constructor(options: DrizzleSqliteTransactionalAdapterOptions) {
    if (
      options === null ||
      typeof options !== 'object' ||
      options.drizzleInstanceToken === undefined ||
      options.drizzleInstanceToken === null
    ) {
      throw new InvalidOption(
        'DrizzleSqliteTransactionalAdapter(options.drizzleInstanceToken)',
        'is required: the injection token of your Drizzle better-sqlite3 database',
      );
    }
    this.connectionToken = options.drizzleInstanceToken;
    this.defaultTxOptions = options.defaultTxOptions;
    this.optionsFactory = (db) => {
      if (!isDrizzleSqlite(db)) {
        throw new InvalidOption(
          'DrizzleSqliteTransactionalAdapter(drizzleInstanceToken)',
          'must resolve to a Drizzle better-sqlite3 database (drizzle(new Database(path)) of drizzle-orm/better-sqlite3); ' +
            'on PostgreSQL use TransactionalAdapterDrizzleOrm',
        );
      }
      let depth = 0;
      return {
        wrapWithTransaction: async (txOptions, fn, setTx) => {
          db.$client.exec(beginStatement(txOptions));
          setTx(db);
          try {
            const result: unknown = await fn();
            db.$client.exec('COMMIT');
            return result;
          } catch (err) {
            if (db.$client.inTransaction) db.$client.exec('ROLLBACK');
            throw err;
          }
        },
        wrapWithNestedTransaction: async (_txOptions, fn, setTx) => {
          const name = `alkstore_cls_${depth++}`;
          db.$client.exec(`SAVEPOINT ${name}`);
          setTx(db);
          try {
            const result: unknown = await fn();
            db.$client.exec(`RELEASE ${name}`);
            return result;
          } catch (err) {
            if (db.$client.inTransaction) {
              db.$client.exec(`ROLLBACK TO ${name}`);
              db.$client.exec(`RELEASE ${name}`);
            }
            throw err;
          } finally {
            depth--;
          }
        },
        getFallbackInstance: () => db,
      };
    };
  }
}
