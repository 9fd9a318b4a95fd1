import type { ClientBase, Pool, PoolClient } from 'pg';
import { Database, InvalidOption } from '../contract/errors.js';
import type { JoinedTx, TxOpen } from '../contract/types.js';
import { assertSameEngine } from './join.js';
import { adapterRunner, whileActive, type AdapterResult } from './runner.js';

const OPEN = 'openPg';

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

function joined<C extends ClientBase>(client: C, isActive: () => boolean): JoinedTx<C> {
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
    throw new Database(`${OPEN}(client): checking the transaction`, err);
  }
  return client.getTransactionStatus() ?? 'unknown';
}

/**
 * The `open` of a `pg` transaction, for `store.joinTransaction(openPg(pool), async (tx, client) => …)`:
 * alkstore's writes through `tx` (enqueue, outboxEnqueue, publish, notify, saveOffset) run on the
 * transaction's own connection and commit with your business writes through `client`, or vanish
 * with them; wakes fire on commit.
 *
 * - Given a `Pool`, each transaction checks out a client, runs `BEGIN`, your function, then
 *   `COMMIT` (or `ROLLBACK` when it throws) and releases the client; a `COMMIT` that PostgreSQL
 *   turned into a rollback (a statement failed and was caught) rejects with `Database`.
 * - Given a client already inside `BEGIN` (a `PoolClient` or `Client`), it joins that transaction
 *   and leaves the commit to you. A client not inside a transaction is refused before any write.
 *
 * PostgreSQL stores only. Anything else than a pool or a client is refused at once (`InvalidOption`).
 *
 * ```ts
 * await store.joinTransaction(openPg(pool), async (tx, client) => {
 *   const { rows } = await client.query('INSERT INTO orders (customer) VALUES ($1) RETURNING id', [customer]);
 *   await tx.outboxEnqueue('deliveries', { orderId: rows[0].id });
 * });
 * ```
 */
export function openPg(pool: Pool): TxOpen<PoolClient>;
export function openPg<C extends ClientBase>(client: C): TxOpen<C>;
export function openPg(poolOrClient: Pool | ClientBase): TxOpen<ClientBase> {
  if (isPool(poolOrClient)) {
    const pool = poolOrClient;
    return async (body, store) => {
      assertSameEngine(OPEN, 'pool', 'postgres', store.engine);
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await whileActive((isActive) => body(joined(client, isActive)));
        const done = await client.query('COMMIT');
        // A statement that failed inside (and was caught) turns COMMIT into ROLLBACK: nothing was written.
        if (done.command !== 'COMMIT')
          throw new Database(
            `${OPEN}: COMMIT`,
            new Error('a statement in the transaction failed, so PostgreSQL rolled it back'),
          );
        return result;
      } catch (err) {
        if (client.getTransactionStatus() !== 'I') await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    };
  }
  if (isClient(poolOrClient)) {
    const client = poolOrClient;
    return async (body, store) => {
      assertSameEngine(OPEN, 'client', 'postgres', store.engine);
      const status = await settledStatus(client);
      if (status !== 'T') {
        throw new InvalidOption(
          `${OPEN}(client)`,
          `is ${status === 'E' ? 'inside a failed transaction (roll it back first)' : 'not inside a transaction'}; ` +
            `run await client.query('BEGIN') before joining it, or pass the Pool and ${OPEN} opens and commits the ` +
            `transaction`,
        );
      }
      return whileActive((isActive) => body(joined(client, isActive)));
    };
  }
  throw new InvalidOption(
    `${OPEN}(poolOrClient)`,
    'must be a pg Pool or a pg client (PoolClient/Client with getTransactionStatus(), a recent pg 8) inside ' +
      "BEGIN; got something else: pass new Pool(...) or await pool.connect() after client.query('BEGIN')",
  );
}
