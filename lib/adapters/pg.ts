import type { ClientBase, Pool, PoolClient } from 'pg';
import { Database, InvalidOption } from '../contract/errors.js';
import type { Store, TxOps } from '../contract/types.js';
import { assertSameEngine, joinVia } from './join.js';
import { adapterRunner, whileActive, type AdapterResult, type Joined } from './runner.js';

const HELPER = 'pgTransaction';

function isPool(x: unknown): x is Pool {
  const p = x as Partial<Pool> | null;
  return typeof p === 'object' && p !== null && typeof p.connect === 'function' && typeof p.totalCount === 'number';
}

function isClient(x: unknown): x is ClientBase {
  const c = x as Partial<ClientBase> | null;
  return (
    typeof c === 'object' && c !== null && typeof c.query === 'function' && typeof c.getTransactionStatus === 'function'
  );
}

function joined<C extends ClientBase>(client: C, isActive: () => boolean): Joined<C> {
  const run = async (sql: string, params: unknown[]): Promise<AdapterResult> => {
    const r = await client.query(sql, params);
    return { records: r.rows as Record<string, unknown>[], affected: r.rowCount ?? 0 };
  };
  return { queryRunner: adapterRunner(run, () => isActive() && client.getTransactionStatus() === 'T'), handle: client };
}

/**
 * The client's transaction status once pg has read the server's ReadyForQuery. pg rejects a failed
 * statement on its ErrorResponse, before the ReadyForQuery that turns the status to 'E', so right
 * after a caught failure the status can still say 'T'. A status of 'T' is therefore confirmed by one
 * read-only round trip, which an aborted transaction refuses (SQLSTATE 25P02).
 */
async function settledStatus(client: ClientBase): Promise<string> {
  const status = client.getTransactionStatus();
  if (status !== 'T') return status ?? 'unknown';
  try {
    await client.query('SELECT 1');
  } catch (err) {
    if ((err as { code?: unknown }).code === '25P02') return 'E';
    throw new Database(`${HELPER}(client): checking the transaction`, err);
  }
  return client.getTransactionStatus() ?? 'unknown';
}

/**
 * Runs `fn` in a `pg` transaction with the store joined to it: alkstore's writes through `tx`
 * (enqueue, outboxEnqueue, publish, notify, saveOffset) run on the transaction's own connection and
 * commit with your business writes through `client`, or vanish with them; wakes fire on commit.
 *
 * - Given a `Pool`, it checks out a client, runs `BEGIN`, `fn`, then `COMMIT` (or `ROLLBACK` when
 *   `fn` throws) and releases the client.
 * - Given a client already inside `BEGIN` (a `PoolClient` or `Client`), it joins that transaction and
 *   leaves the commit to you. A client not inside a transaction is refused before any write.
 *
 * PostgreSQL stores only.
 *
 * ```ts
 * await pgTransaction(pool, store, async (tx, client) => {
 *   const { rows } = await client.query('INSERT INTO orders (customer) VALUES ($1) RETURNING id', [customer]);
 *   await tx.outboxEnqueue('deliveries', { orderId: rows[0].id });
 * });
 * ```
 */
export function pgTransaction<T>(
  pool: Pool,
  store: Store,
  fn: (tx: TxOps, client: PoolClient) => Promise<T>,
): Promise<T>;
export function pgTransaction<C extends ClientBase, T>(
  client: C,
  store: Store,
  fn: (tx: TxOps, client: C) => Promise<T>,
): Promise<T>;
export async function pgTransaction<T>(
  poolOrClient: Pool | ClientBase,
  store: Store,
  userFn: (tx: TxOps, client: never) => Promise<T>,
): Promise<T> {
  const fn = userFn as (tx: TxOps, client: ClientBase) => Promise<T>;
  if (isPool(poolOrClient)) {
    assertSameEngine(HELPER, 'pool', 'postgres', store);
    const pool = poolOrClient;
    return joinVia<ClientBase, T>(
      store,
      async (body) => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const result = await whileActive((isActive) => body(joined(client, isActive)));
          const done = await client.query('COMMIT');
          // A statement that failed inside (and was caught) turns COMMIT into ROLLBACK: nothing was written.
          if (done.command !== 'COMMIT')
            throw new Database(
              `${HELPER}: COMMIT`,
              new Error('a statement in the transaction failed, so PostgreSQL rolled it back'),
            );
          return result;
        } catch (err) {
          if (client.getTransactionStatus() !== 'I') await client.query('ROLLBACK').catch(() => undefined);
          throw err;
        } finally {
          client.release();
        }
      },
      fn,
    );
  }
  if (isClient(poolOrClient)) {
    assertSameEngine(HELPER, 'client', 'postgres', store);
    const client = poolOrClient;
    const status = await settledStatus(client);
    if (status !== 'T') {
      throw new InvalidOption(
        `${HELPER}(client)`,
        `is ${status === 'E' ? 'inside a failed transaction (roll it back first)' : 'not inside a transaction'}; run await client.query('BEGIN') before joining it, or pass the Pool and ${HELPER} opens and commits the transaction`,
      );
    }
    return joinVia<ClientBase, T>(store, (body) => whileActive((isActive) => body(joined(client, isActive))), fn);
  }
  throw new InvalidOption(
    `${HELPER}(poolOrClient)`,
    "must be a pg Pool or a pg client (PoolClient/Client with getTransactionStatus(), a recent pg 8) inside BEGIN; got something else: pass new Pool(...) or await pool.connect() after client.query('BEGIN')",
  );
}
