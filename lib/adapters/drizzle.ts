import type { SQL } from 'drizzle-orm';
import { InvalidOption } from '../contract/errors.js';
import type { JoinedTx, TxOpen, TxOpenContext } from '../contract/types.js';
import { loadPeer } from '../internal/load-peer.js';
import { assertSameEngine } from './join.js';
import { returnsRows, splitPlaceholders, type Dialect } from './placeholders.js';
import { adapterRunner, whileActive, type AdapterResult, type SyncSqliteConnection } from './runner.js';

const OPEN = 'openDrizzle';

/** A Drizzle PostgreSQL database (node-postgres, postgres.js, …): `transaction(async (tx) => …)` with `tx.execute(sql)`. */
export interface DrizzlePgDatabaseLike {
  transaction(...args: never[]): Promise<unknown>;
  execute(query: SQL): PromiseLike<unknown>;
}

/** A Drizzle better-sqlite3 database: synchronous `run`/`all`, `$client` the better-sqlite3 connection. */
export interface DrizzleSqliteDatabaseLike {
  run(query: SQL): unknown;
  all(query: SQL): unknown;
  readonly $client: SyncSqliteConnection & { prepare(sql: string): unknown };
}

/** The transaction object Drizzle hands `db.transaction(fn)`'s callback. */
export type DrizzleTxOf<D extends DrizzlePgDatabaseLike> = D extends {
  transaction(fn: (tx: infer X) => Promise<unknown>, ...rest: never[]): unknown;
}
  ? X
  : never;

export interface Executes {
  execute(query: SQL): PromiseLike<unknown>;
}

export type SqlTag = typeof import('drizzle-orm').sql;

export function isDrizzleSqlite(db: unknown): db is DrizzleSqliteDatabaseLike {
  const c = (db as { $client?: Partial<SyncSqliteConnection & { prepare: unknown }> } | null)?.$client;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.prepare === 'function' &&
    typeof c.inTransaction === 'boolean' &&
    typeof (db as DrizzleSqliteDatabaseLike).all === 'function'
  );
}

export function isDrizzlePg(db: unknown): db is DrizzlePgDatabaseLike {
  const d = db as Partial<DrizzlePgDatabaseLike> | null;
  return typeof d === 'object' && d !== null && typeof d.transaction === 'function' && typeof d.execute === 'function';
}

/** One alkstore statement as a Drizzle `SQL`: its text as raw pieces, its values as Drizzle parameters (Drizzle numbers them). */
function toSql(sql: SqlTag, text: string, params: unknown[], dialect: Dialect): SQL {
  const { parts, refs } = splitPlaceholders(text, dialect);
  const chunks: SQL[] = [sql.raw(parts[0]!)];
  refs.forEach((ref, i) => {
    chunks.push(sql`${sql.param(params[ref])}`, sql.raw(parts[i + 1]!));
  });
  return sql.join(chunks);
}

function pgResult(raw: unknown): AdapterResult {
  if (Array.isArray(raw)) {
    // postgres.js: the rows array, with `count`.
    const count = (raw as { count?: unknown }).count;
    return { records: raw as Record<string, unknown>[], affected: typeof count === 'number' ? count : raw.length };
  }
  const r = raw as { rows?: unknown; rowCount?: unknown } | null;
  const rows = Array.isArray(r?.rows) ? (r.rows as Record<string, unknown>[]) : [];
  return { records: rows, affected: typeof r?.rowCount === 'number' ? r.rowCount : rows.length };
}

/** alkstore's statements on a Drizzle better-sqlite3 database whose connection is in the transaction; active while `isActive()` and the connection is in it. */
export function drizzleSqliteJoined<D extends DrizzleSqliteDatabaseLike>(
  sql: SqlTag,
  db: D,
  isActive: () => boolean,
): JoinedTx<D> {
  const run = async (text: string, params: unknown[]): Promise<AdapterResult> => {
    const q = toSql(sql, text, params, 'sqlite');
    if (returnsRows(text)) {
      const rows = db.all(q) as Record<string, unknown>[];
      return { records: rows, affected: rows.length };
    }
    const r = db.run(q) as { changes?: number };
    return { records: [], affected: r.changes ?? 0 };
  };
  return { queryRunner: adapterRunner(run, () => isActive() && db.$client.inTransaction, db.$client), handle: db };
}

/** alkstore's statements on a Drizzle PostgreSQL transaction (`drizzleTx.execute`), active while `isActive()`. */
export function drizzlePgJoined<X extends Executes>(sql: SqlTag, drizzleTx: X, isActive: () => boolean): JoinedTx<X> {
  const run = async (text: string, params: unknown[]): Promise<AdapterResult> =>
    pgResult(await drizzleTx.execute(toSql(sql, text, params, 'postgres')));
  return { queryRunner: adapterRunner(run, isActive), handle: drizzleTx };
}

/**
 * The `open` of a Drizzle transaction, for `store.joinTransaction(openDrizzle(db), async (tx, drizzleTx) => …)`:
 * alkstore's writes through `tx` run on the transaction's own connection and commit with your
 * business writes through `drizzleTx`, or vanish with them; wakes fire on commit.
 *
 * - PostgreSQL (node-postgres, postgres.js): each transaction is `db.transaction(async (drizzleTx) => …)`,
 *   and your function gets that `drizzleTx`.
 * - SQLite (better-sqlite3): Drizzle's better-sqlite3 transactions are synchronous, so each
 *   transaction is opened on the database's connection itself (`BEGIN` … `COMMIT`, `ROLLBACK` when
 *   your function throws) and your function gets `db`; such transactions of one store run one at a
 *   time through the store's write path. Do not write through the same `db` outside one while one
 *   is open.
 *
 * A Drizzle transaction (`db` must be the database) or anything else is refused at once (`InvalidOption`).
 *
 * ```ts
 * await store.joinTransaction(openDrizzle(db), async (tx, drizzleTx) => {
 *   const [order] = await drizzleTx.insert(orders).values({ customer }).returning();
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function openDrizzle<D extends DrizzleSqliteDatabaseLike>(db: D): TxOpen<D>;
export function openDrizzle<D extends DrizzlePgDatabaseLike>(db: D): TxOpen<DrizzleTxOf<D>>;
export function openDrizzle(db: DrizzlePgDatabaseLike | DrizzleSqliteDatabaseLike): TxOpen<unknown> {
  if (typeof (db as { rollback?: unknown } | null)?.rollback === 'function') {
    throw new InvalidOption(
      `${OPEN}(db)`,
      `is a Drizzle transaction; ${OPEN} opens the transaction itself: pass the database (drizzle(...)) and write through the handle it gives your function`,
    );
  }
  if (isDrizzleSqlite(db)) {
    return async (body, store) => {
      assertSameEngine(OPEN, 'db', 'sqlite', store.engine);
      const { sql } = await loadPeer('drizzle-orm', () => import('drizzle-orm'), `for ${OPEN}`);
      db.run(sql.raw('BEGIN'));
      try {
        const result = await whileActive((isActive) => body(drizzleSqliteJoined(sql, db, isActive)));
        db.run(sql.raw('COMMIT'));
        return result;
      } catch (err) {
        if (db.$client.inTransaction) db.run(sql.raw('ROLLBACK'));
        throw err;
      }
    };
  }
  if (isDrizzlePg(db)) {
    return async <T>(body: (joined: JoinedTx<unknown>) => Promise<T>, store: TxOpenContext) => {
      assertSameEngine(OPEN, 'db', 'postgres', store.engine);
      const { sql } = await loadPeer('drizzle-orm', () => import('drizzle-orm'), `for ${OPEN}`);
      return (db.transaction as (fn: (drizzleTx: unknown) => Promise<T>) => Promise<T>)((drizzleTx) =>
        whileActive((isActive) => body(drizzlePgJoined(sql, drizzleTx as Executes, isActive))),
      );
    };
  }
  throw new InvalidOption(
    `${OPEN}(db)`,
    'must be a Drizzle database: drizzle(pool) of drizzle-orm/node-postgres (or postgres-js) on PostgreSQL, ' +
      'drizzle(database) of drizzle-orm/better-sqlite3 on SQLite',
  );
}
