import type { Knex } from 'knex';
import { InvalidOption } from '../contract/errors.js';
import type { EngineKind, JoinedTx, TxOpen } from '../contract/types.js';
import { assertSameEngine } from './join.js';
import { splitPlaceholders, type Dialect } from './placeholders.js';
import { adapterRunner, whileActive, type AdapterResult } from './runner.js';

const OPEN = 'openKnex';

function isKnex(x: unknown): x is Knex {
  const k = x as { raw?: unknown; transaction?: unknown; client?: unknown };
  return (
    typeof x === 'function' &&
    typeof k.raw === 'function' &&
    typeof k.transaction === 'function' &&
    typeof k.client === 'object'
  );
}

function engineOf(k: Knex): EngineKind | null {
  const c = k.client as { dialect?: unknown; config?: { client?: unknown } };
  const name = String(c.dialect ?? c.config?.client ?? '');
  if (/sqlite/i.test(name)) return 'sqlite';
  if (/^(postgres|postgresql|pg)$/i.test(name)) return 'postgres';
  return null;
}

/**
 * knex binds `?` everywhere (and turns it into `$1` for PostgreSQL): each placeholder of the
 * statement becomes a `?` and its value goes in order (a repeated `$n` repeats its value); a `?`
 * already in the text is escaped so knex leaves it alone.
 */
function toKnex(sql: string, params: unknown[], dialect: Dialect): { sql: string; bindings: unknown[] } {
  const { parts, refs } = splitPlaceholders(sql, dialect);
  const escape = (s: string): string => s.replace(/\?/g, '\\?');
  let text = escape(parts[0]!);
  const bindings: unknown[] = [];
  refs.forEach((ref, i) => {
    text += `?${escape(parts[i + 1]!)}`;
    const v = params[ref];
    bindings.push(v === undefined ? null : v);
  });
  return { sql: text, bindings };
}

function result(raw: unknown): AdapterResult {
  if (Array.isArray(raw)) return { records: raw as Record<string, unknown>[], affected: raw.length };
  const r = raw as { rows?: unknown; rowCount?: unknown; changes?: unknown } | null;
  if (Array.isArray(r?.rows))
    return {
      records: r.rows as Record<string, unknown>[],
      affected: typeof r.rowCount === 'number' ? r.rowCount : r.rows.length,
    };
  return { records: [], affected: typeof r?.changes === 'number' ? r.changes : 0 };
}

function joined(
  trx: Knex.Transaction,
  dialect: Dialect,
  isActive: () => boolean,
  source: Knex,
): JoinedTx<Knex.Transaction> {
  const run = async (sql: string, params: unknown[]): Promise<AdapterResult> => {
    const q = toKnex(sql, params, dialect);
    return result(await trx.raw(q.sql, q.bindings as Knex.RawBinding[]));
  };
  return { queryRunner: adapterRunner(run, () => isActive() && !trx.isCompleted(), null, source), handle: trx };
}

/**
 * The `open` of a knex transaction, for `store.joinTransaction(openKnex(knex), async (tx, trx) => …)`:
 * alkstore's writes through `tx` run on the transaction's own connection and commit with your
 * business writes through `trx`, or vanish with them; wakes fire on commit. knex's `pg` client on a
 * PostgreSQL store, its `better-sqlite3` client on a SQLite one.
 *
 * - Given the `knex` instance, each transaction is `knex.transaction(async (trx) => …)`.
 * - Given a `trx` still open, it joins it and leaves the commit to you; a finished one
 *   (`trx.isCompleted()`) is refused before any write.
 *
 * knex binds `?` everywhere: alkstore's `$1` placeholders (PostgreSQL) become knex bindings and any
 * other `?` is escaped. Anything else than a knex instance or transaction is refused at once
 * (`InvalidOption`).
 *
 * ```ts
 * await store.joinTransaction(openKnex(knex), async (tx, trx) => {
 *   const [order] = await trx('orders').insert({ customer }).returning('id');
 *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
 * });
 * ```
 */
export function openKnex(knexOrTrx: Knex | Knex.Transaction): TxOpen<Knex.Transaction> {
  if (!isKnex(knexOrTrx))
    throw new InvalidOption(
      `${OPEN}(knex)`,
      "must be a knex instance (knex({ client: 'pg' | 'better-sqlite3', … })) or one of its open transactions",
    );
  const engine = engineOf(knexOrTrx);
  if (engine === null)
    throw new InvalidOption(
      `${OPEN}(knex)`,
      "uses a client that is neither 'pg' nor 'better-sqlite3'/'sqlite3'; alkstore stores are PostgreSQL or SQLite",
    );
  const k = knexOrTrx as Knex & Partial<Pick<Knex.Transaction, 'isCompleted'>>;
  if (k.isTransaction === true) {
    const trx = knexOrTrx as Knex.Transaction;
    return async (body, store) => {
      assertSameEngine(OPEN, 'knex', engine, store.engine);
      if (trx.isCompleted()) {
        throw new InvalidOption(
          `${OPEN}(trx)`,
          `is a transaction that already committed or rolled back; pass the knex instance (${OPEN} opens a new transaction) or a trx that is still open`,
        );
      }
      return whileActive((isActive) => body(joined(trx, engine, isActive, trx)));
    };
  }
  return async (body, store) => {
    assertSameEngine(OPEN, 'knex', engine, store.engine);
    return knexOrTrx.transaction((trx) => whileActive((isActive) => body(joined(trx, engine, isActive, knexOrTrx))));
  };
}
