import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { InvalidOption } from '../contract/errors.js';
import type { EngineKind, JoinedTx, QueryRunnerLike, TxOpen } from '../contract/types.js';
import { assertSameEngine } from './join.js';
import { whileActive } from './runner.js';

const OPEN = 'openTypeOrm';

function isDataSource(x: unknown): x is DataSource {
  const d = x as Partial<DataSource> | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.transaction === 'function' &&
    typeof d.createQueryRunner === 'function' &&
    typeof d.options === 'object'
  );
}

export function isEntityManager(x: unknown): x is EntityManager {
  const m = x as Partial<EntityManager> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    typeof m.transaction === 'function' &&
    typeof m.query === 'function' &&
    typeof m.connection === 'object'
  );
}

/** The engine a TypeORM DataSource's driver speaks, or null for any other database. */
export function typeOrmEngineOf(ds: DataSource): EngineKind | null {
  const type = String(ds.options.type);
  if (type === 'better-sqlite3' || type === 'sqlite') return 'sqlite';
  if (type === 'postgres') return 'postgres';
  return null;
}

/**
 * TypeORM's query runner as alkstore joins it, active while `isActive()` (until your function
 * settles) and while TypeORM's transaction is; its driver stays reachable, so a revoked SQLite
 * transaction is rolled back on its connection at once.
 */
export function typeOrmJoined(em: EntityManager, isActive: () => boolean): JoinedTx<EntityManager> {
  const qr = em.queryRunner as QueryRunner;
  const runner: QueryRunnerLike & { readonly driver: unknown } = {
    get isTransactionActive() {
      return isActive() && qr.isTransactionActive;
    },
    get isReleased() {
      return qr.isReleased;
    },
    query: (sql, parameters, structured) => (structured ? qr.query(sql, parameters, true) : qr.query(sql, parameters)),
    driver: (qr as { driver?: unknown }).driver,
  };
  return { queryRunner: runner, handle: em };
}

/**
 * The `open` of a TypeORM transaction, for `store.joinTransaction(openTypeOrm(dataSource), async (tx, em) => …)`:
 * alkstore's writes through `tx` run on the transaction's query runner and commit with your
 * business writes through `em`, or vanish with them; wakes fire on commit.
 *
 * - Given the `DataSource`, each transaction is `dataSource.transaction(async (em) => …)`.
 * - Given an `EntityManager` inside a transaction (PostgreSQL), it joins that transaction and leaves
 *   the commit to whoever opened it; one with no active transaction is refused before any write.
 *   On SQLite pass the DataSource: TypeORM runs every transaction of a SQLite DataSource on one
 *   connection without serializing them, so only a transaction the store opens itself can be kept
 *   apart from the others (joined transactions of one store run one at a time through its write path).
 *
 * A DataSource that is neither PostgreSQL nor SQLite (better-sqlite3), or anything else, is refused
 * at once (`InvalidOption`).
 *
 * ```ts
 * await store.joinTransaction(openTypeOrm(dataSource), async (tx, em) => {
 *   const order = await em.save(Order, { customer });
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function openTypeOrm(dataSourceOrManager: DataSource | EntityManager): TxOpen<EntityManager> {
  if (isDataSource(dataSourceOrManager)) {
    const ds = dataSourceOrManager;
    const engine = typeOrmEngineOf(ds);
    if (engine === null)
      throw new InvalidOption(
        `${OPEN}(dataSource)`,
        `is a TypeORM DataSource of type ${JSON.stringify(String(ds.options.type))}; alkstore stores are PostgreSQL ('postgres') or SQLite ('better-sqlite3')`,
      );
    return async (body, store) => {
      assertSameEngine(OPEN, 'dataSource', engine, store.engine);
      return ds.transaction((em) => whileActive((isActive) => body(typeOrmJoined(em, isActive))));
    };
  }
  if (isEntityManager(dataSourceOrManager)) {
    const em = dataSourceOrManager;
    const engine = typeOrmEngineOf(em.connection);
    if (engine !== 'postgres')
      throw new InvalidOption(
        `${OPEN}(entityManager)`,
        engine === 'sqlite'
          ? `is a manager of a SQLite DataSource; pass the DataSource itself (${OPEN}(dataSource)): TypeORM runs ` +
              `every transaction of a SQLite DataSource on one connection without serializing them, so the store joins ` +
              `only a transaction it opens, one at a time through its write path`
          : `is a manager of a TypeORM DataSource of type ${JSON.stringify(String(em.connection.options.type))}; alkstore stores are PostgreSQL or SQLite`,
      );
    return async (body, store) => {
      assertSameEngine(OPEN, 'entityManager', engine, store.engine);
      const qr = em.queryRunner;
      if (!qr || qr.isTransactionActive !== true || qr.isReleased) {
        throw new InvalidOption(
          `${OPEN}(entityManager)`,
          'has no active transaction (or its QueryRunner is released); pass the manager given by dataSource.transaction(...), ' +
            'or the DataSource so that the transaction is opened for you',
        );
      }
      return whileActive((isActive) => body(typeOrmJoined(em, isActive)));
    };
  }
  throw new InvalidOption(
    `${OPEN}(dataSourceOrManager)`,
    'must be a TypeORM DataSource (new DataSource({ type: "postgres" | "better-sqlite3", … }), initialized) or an EntityManager inside a transaction',
  );
}
