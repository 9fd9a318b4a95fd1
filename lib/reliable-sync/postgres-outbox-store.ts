import type { Pool, PoolConfig } from 'pg';
import { Closed, Database as DatabaseError, InvalidOption } from '../contract/errors.js';
import { loadPeer } from '../internal/load-peer.js';
import { assertEpoch, assertFrame, type OutboxRecord } from './epoch.js';
import type { OutboxStore } from './outbox-store.js';
import { checkIdentifier, checkKey } from './store-options.js';
import { validatePgSchema } from '../contract/validate.js';

/** Options of {@link PostgresOutboxStore.open}. */
export interface PostgresOutboxStoreOptions {
  /** A pg `Pool` to use; the store never ends it. Give this or `connectionString`. */
  pool?: Pool;
  /** A connection string; the store creates (and on close ends) its own small pool. */
  connectionString?: string;
  /** Extra pool settings when the store creates the pool (default `max: 2`). */
  poolConfig?: Omit<PoolConfig, 'connectionString'>;
  /** Schema of the tables, created if missing. Default `public`. */
  schema?: string;
  /** Prefix of the two tables `<prefix>_frame` and `<prefix>_cursor`. Default `alkstore_sync`. */
  tablePrefix?: string;
  /** Which outbox of this database (one per document or peer). Default `"default"`. */
  key?: string;
}

/**
 * An {@link OutboxStore} in PostgreSQL (pg, loaded only when a store is
 * opened). Frames live in `<schema>.<prefix>_frame` keyed by
 * `(outbox_key, epoch)`; `saveCursor` is one upsert that keeps
 * `GREATEST(cursor, excluded.cursor)`, so concurrent handles and processes
 * keep the maximum.
 */
export class PostgresOutboxStore implements OutboxStore {
  private closed = false;

  private constructor(
    private readonly pool: Pool,
    private readonly owned: boolean,
    /** The outbox key this handle reads and writes. */
    readonly key: string,
    private readonly frameTable: string,
    private readonly cursorTable: string,
  ) {}

  /** Opens the outbox `key`, creating the schema and tables if missing (under an advisory lock, so concurrent boots are safe). */
  static async open(options: PostgresOutboxStoreOptions): Promise<PostgresOutboxStore> {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object');
    const key = checkKey(options.key);
    const schema = options.schema === undefined ? 'public' : validatePgSchema('schema', options.schema);
    const prefix = checkIdentifier('tablePrefix', options.tablePrefix, 'alkstore_sync');
    let pool = options.pool;
    const owned = !pool;
    if (!pool) {
      if (typeof options.connectionString !== 'string' || options.connectionString.length === 0) {
        throw new InvalidOption(
          'connectionString',
          'must be a non-empty string (PostgresOutboxStore.open needs a `pool` or a `connectionString`)',
        );
      }
      const pg = await loadPeer('pg', () => import('pg'));
      pool = new pg.default.Pool({ max: 2, ...options.poolConfig, connectionString: options.connectionString });
    }
    const frameTable = `"${schema}"."${prefix}_frame"`;
    const cursorTable = `"${schema}"."${prefix}_cursor"`;
    try {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        // CREATE ... IF NOT EXISTS still races on the catalog; the lock makes concurrent opens wait instead of failing.
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`alkstore_sync:${schema}.${prefix}`]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${frameTable} (
             outbox_key text NOT NULL,
             epoch bigint NOT NULL,
             frame bytea NOT NULL,
             PRIMARY KEY (outbox_key, epoch)
           )`,
        );
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${cursorTable} (
             outbox_key text PRIMARY KEY,
             cursor bigint NOT NULL
           )`,
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    } catch (err) {
      if (owned) await pool.end().catch(() => undefined);
      throw new DatabaseError(`set up postgres outbox ${schema}.${prefix}`, err);
    }
    return new PostgresOutboxStore(pool, owned, key, frameTable, cursorTable);
  }

  async put(epoch: number, frame: Uint8Array): Promise<void> {
    assertEpoch(epoch);
    assertFrame(frame, epoch);
    await this.query(
      'put',
      `INSERT INTO ${this.frameTable} (outbox_key, epoch, frame) VALUES ($1, $2, $3)
       ON CONFLICT (outbox_key, epoch) DO UPDATE SET frame = EXCLUDED.frame`,
      [this.key, epoch, Buffer.from(frame)],
    );
  }

  async deleteThrough(epoch: number): Promise<void> {
    assertEpoch(epoch);
    await this.query('deleteThrough', `DELETE FROM ${this.frameTable} WHERE outbox_key = $1 AND epoch <= $2`, [
      this.key,
      epoch,
    ]);
  }

  async scanAfter(epoch: number): Promise<OutboxRecord[]> {
    assertEpoch(epoch);
    const rows = await this.query<{ epoch: string; frame: Buffer }>(
      'scanAfter',
      `SELECT epoch, frame FROM ${this.frameTable} WHERE outbox_key = $1 AND epoch > $2 ORDER BY epoch`,
      [this.key, epoch],
    );
    // bigint arrives as a string; epochs are safe integers by construction.
    return rows.map((r) => ({ epoch: Number(r.epoch), frame: new Uint8Array(r.frame) }));
  }

  async loadCursor(): Promise<number> {
    const rows = await this.query<{ cursor: string }>(
      'loadCursor',
      `SELECT cursor FROM ${this.cursorTable} WHERE outbox_key = $1`,
      [this.key],
    );
    return rows.length === 0 ? 0 : Number(rows[0].cursor);
  }

  async saveCursor(epoch: number): Promise<void> {
    assertEpoch(epoch);
    await this.query(
      'saveCursor',
      `INSERT INTO ${this.cursorTable} AS c (outbox_key, cursor) VALUES ($1, $2)
       ON CONFLICT (outbox_key) DO UPDATE SET cursor = GREATEST(c.cursor, EXCLUDED.cursor)`,
      [this.key, epoch],
    );
  }

  /** Ends the pool if this store created it. Later calls throw {@link Closed}. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.owned) await this.pool.end();
  }

  private async query<R>(operation: string, text: string, values: unknown[]): Promise<R[]> {
    if (this.closed) throw new Closed('postgres outbox store');
    try {
      const res = await this.pool.query(text, values);
      return res.rows as R[];
    } catch (err) {
      throw new DatabaseError(`postgres outbox ${operation} (key ${JSON.stringify(this.key)})`, err);
    }
  }
}
