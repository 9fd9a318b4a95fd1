import type { Kysely, Transaction } from 'kysely';
import { InvalidOption } from '../contract/errors.js';
import type { EngineKind, TxOpen } from '../contract/types.js';
import { loadPeer } from '../internal/load-peer.js';
import { assertSameEngine } from './join.js';
import { adapterRunner, whileActive, type AdapterResult } from './runner.js';

const OPEN = 'openKysely';

function isKysely(db: unknown): db is Kysely<unknown> {
  const k = db as Partial<Kysely<unknown>> | null;
  return (
    typeof k === 'object' &&
    k !== null &&
    typeof k.transaction === 'function' &&
    typeof k.executeQuery === 'function' &&
    typeof k.getExecutor === 'function'
  );
}

/**
 * The engine a Kysely instance's dialect speaks, from its adapter (`supportsReturning`,
 * `supportsTransactionalDdl` tell SQLite and PostgreSQL apart from MySQL).
 */
function engineOf(db: Kysely<unknown>): EngineKind | null {
  const adapter = db.getExecutor().adapter as { constructor: { name: string } };
  const name = adapter.constructor.name;
  if (/^Sqlite/i.test(name)) return 'sqlite';
  if (/^Postgres/i.test(name)) return 'postgres';
  return null;
}

/**
 * The `open` of a Kysely transaction, for `store.joinTransaction(openKysely(db), async (tx, trx) => …)`:
 * each transaction is `db.transaction().execute(trx => …)`, and alkstore's writes through `tx` run on
 * the transaction's own connection and commit with your business writes through `trx`, or vanish
 * with them; wakes fire on commit. Kysely's `PostgresDialect` on a PostgreSQL store, its
 * `SqliteDialect` (better-sqlite3) on a SQLite one; alkstore's statements go to the driver as
 * written (`CompiledQuery.raw`). A Kysely transaction (`db` must be the instance) or anything else
 * is refused at once (`InvalidOption`).
 *
 * ```ts
 * await store.joinTransaction(openKysely(db), async (tx, trx) => {
 *   const order = await trx.insertInto('orders').values({ customer }).returning('id').executeTakeFirstOrThrow();
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function openKysely<DB>(db: Kysely<DB>): TxOpen<Transaction<DB>> {
  if (!isKysely(db))
    throw new InvalidOption(
      `${OPEN}(db)`,
      'must be a Kysely instance (new Kysely({ dialect: new PostgresDialect(...) }) or SqliteDialect)',
    );
  if (db.isTransaction) {
    throw new InvalidOption(
      `${OPEN}(db)`,
      `is a Kysely transaction; ${OPEN} opens the transaction itself: pass the Kysely instance and write through the trx it gives your function`,
    );
  }
  const engine = engineOf(db as Kysely<unknown>);
  if (engine === null)
    throw new InvalidOption(
      `${OPEN}(db)`,
      "uses a dialect that is neither Kysely's PostgresDialect nor its SqliteDialect; alkstore stores are PostgreSQL or SQLite",
    );
  return async (body, store) => {
    assertSameEngine(OPEN, 'db', engine, store.engine);
    const { CompiledQuery } = await loadPeer('kysely', () => import('kysely'), `for ${OPEN}`);
    return db.transaction().execute((trx) =>
      whileActive((isActive) => {
        // The statement goes to the driver as written: Kysely's PostgreSQL driver takes $1, its SQLite driver ?.
        const run = async (sql: string, params: unknown[]): Promise<AdapterResult> => {
          const r = await trx.executeQuery(CompiledQuery.raw(sql, params));
          const rows = r.rows as Record<string, unknown>[];
          return {
            records: rows,
            affected: r.numAffectedRows !== undefined ? Number(r.numAffectedRows) : rows.length,
          };
        };
        return body({ queryRunner: adapterRunner(run, isActive, null, db), handle: trx });
      }),
    );
  };
}
