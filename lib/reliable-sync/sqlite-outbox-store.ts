import type BetterSqlite3 from 'better-sqlite3';
import { Closed, Database as DatabaseError, InvalidOption } from '../contract/errors.js';
import { asOption, requireTimerMs } from '../contract/validate.js';
import { sqliteOpener } from '../engines/sqlite/connection.js';
import {
  validateDriverOption,
  type SqliteDatabase,
  type SqliteDriverName,
  type SqliteStatement,
} from '../engines/sqlite/binding.js';
import { assertEpoch, assertFrame, type OutboxRecord } from './epoch.js';
import type { OutboxStore } from './outbox-store.js';
import { checkIdentifier, checkKey } from './store-options.js';

/** Options of {@link SqliteOutboxStore.open}. */
export interface SqliteOutboxStoreOptions {
  /** A SQLite file path (opened in WAL mode). Give this or `database`. */
  path?: string;
  /** An open better-sqlite3 connection to use instead of `path`; the store never closes it. */
  database?: BetterSqlite3.Database;
  /**
   * Which SQLite driver opens `path`, as the SQLite engine's `driver` option: `'auto'` (default:
   * better-sqlite3 when it is installed and loads, else Node's built-in `node:sqlite`),
   * `'better-sqlite3'`, or `'node:sqlite'` (Node 22.13+ / 24, no native addon). Only with `path`.
   */
  driver?: 'auto' | SqliteDriverName;
  /** Which outbox of this database (one per document or peer). Default `"default"`. */
  key?: string;
  /** Prefix of the two tables `<prefix>_frame` and `<prefix>_cursor`. Default `alkstore_sync`. */
  tablePrefix?: string;
  /**
   * How long a statement waits for another connection's lock (ms, an integer in 0..2^31-1,
   * default 5000; 0 fails at once); only for a connection the store opens. Anything else is
   * an `InvalidOption` naming `busyTimeoutMs`, before the file is opened.
   */
  busyTimeoutMs?: number;
}

/**
 * An {@link OutboxStore} in an embedded SQLite database (better-sqlite3 or
 * `node:sqlite`, loaded only when a store is opened; see `driver`). Frames live in `<prefix>_frame`
 * keyed by `(outbox_key, epoch)`; the cursor in `<prefix>_cursor`, where
 * `saveCursor` upserts `max(cursor, excluded.cursor)` in one statement, so
 * any number of handles and processes keep the maximum.
 */
export class SqliteOutboxStore implements OutboxStore {
  private closed = false;

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly owned: boolean,
    /** The outbox key this handle reads and writes. */
    readonly key: string,
    private readonly sql: ReturnType<typeof prepare>,
  ) {}

  /** Opens (creating the tables if missing) the outbox `key` of a SQLite database. */
  static async open(options: SqliteOutboxStoreOptions): Promise<SqliteOutboxStore> {
    if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object');
    const key = checkKey(options.key);
    const prefix = checkIdentifier('tablePrefix', options.tablePrefix, 'alkstore_sync');
    const busyTimeoutMs =
      options.busyTimeoutMs === undefined
        ? 5000
        : asOption(() => requireTimerMs('busyTimeoutMs', options.busyTimeoutMs, 0));
    const driver = validateDriverOption(options.driver);
    let db: SqliteDatabase | undefined;
    if (options.database !== undefined) {
      if (options.driver !== undefined) {
        throw new InvalidOption(
          'driver',
          'applies only with `path`: the store uses the `database` connection you pass as it is',
        );
      }
      if (!isBetterSqlite3(options.database)) {
        throw new InvalidOption(
          'database',
          "must be an open better-sqlite3 connection (new Database(path)); for node:sqlite pass `path` with driver: 'node:sqlite'",
        );
      }
      db = options.database as unknown as SqliteDatabase;
    }
    const owned = !db;
    if (!db) {
      if (typeof options.path !== 'string' || options.path.length === 0) {
        throw new InvalidOption(
          'path',
          'must be a non-empty string (SqliteOutboxStore.open needs a `path` or an open `database`)',
        );
      }
      const { open } = await sqliteOpener(driver);
      const path = options.path;
      db = wrap(`open sqlite outbox ${JSON.stringify(path)}`, () => {
        const opened = open(path, { readonly: false });
        try {
          // The timeout applies from the first statement that locks on: another process may hold the lock while it switches the file to WAL.
          opened.pragma(`busy_timeout = ${busyTimeoutMs}`);
          // WAL lets readers run beside the writer; FULL makes every commit durable (append before send).
          opened.pragma('journal_mode = WAL');
          opened.pragma('synchronous = FULL');
        } catch (err) {
          opened.close();
          throw err;
        }
        return opened;
      });
    }
    const conn = db;
    wrap('set up sqlite outbox', () => {
      conn.exec(
        `CREATE TABLE IF NOT EXISTS ${prefix}_frame (
           outbox_key TEXT NOT NULL,
           epoch INTEGER NOT NULL,
           frame BLOB NOT NULL,
           PRIMARY KEY (outbox_key, epoch)
         ) WITHOUT ROWID;
         CREATE TABLE IF NOT EXISTS ${prefix}_cursor (
           outbox_key TEXT PRIMARY KEY,
           cursor INTEGER NOT NULL
         ) WITHOUT ROWID;`,
      );
    });
    return new SqliteOutboxStore(conn, owned, key, prepare(conn, prefix));
  }

  async put(epoch: number, frame: Uint8Array): Promise<void> {
    assertEpoch(epoch);
    assertFrame(frame, epoch);
    this.run('put', () => this.sql.put.run(this.key, epoch, Buffer.from(frame)));
  }

  async deleteThrough(epoch: number): Promise<void> {
    assertEpoch(epoch);
    this.run('deleteThrough', () => this.sql.deleteThrough.run(this.key, epoch));
  }

  async scanAfter(epoch: number): Promise<OutboxRecord[]> {
    assertEpoch(epoch);
    // better-sqlite3 reads a BLOB as a Buffer, node:sqlite as a Uint8Array: either is copied into a plain Uint8Array.
    const rows = this.run(
      'scanAfter',
      () => this.sql.scanAfter.all(this.key, epoch) as { epoch: number; frame: Uint8Array }[],
    );
    return rows.map((r) => ({ epoch: r.epoch, frame: new Uint8Array(r.frame) }));
  }

  async loadCursor(): Promise<number> {
    const row = this.run('loadCursor', () => this.sql.loadCursor.get(this.key) as { cursor: number } | undefined);
    return row?.cursor ?? 0;
  }

  async saveCursor(epoch: number): Promise<void> {
    assertEpoch(epoch);
    this.run('saveCursor', () => this.sql.saveCursor.run(this.key, epoch));
  }

  /** Closes the connection if this store opened it. Later calls throw {@link Closed}. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.owned) this.db.close();
  }

  private run<T>(operation: string, fn: () => T): T {
    if (this.closed) throw new Closed('sqlite outbox store');
    return wrap(`sqlite outbox ${operation} (key ${JSON.stringify(this.key)})`, fn);
  }
}

function isBetterSqlite3(db: unknown): boolean {
  const d = db as Partial<Record<'prepare' | 'exec' | 'pragma' | 'transaction', unknown>> | null;
  return (
    typeof d === 'object' &&
    d !== null &&
    typeof d.prepare === 'function' &&
    typeof d.exec === 'function' &&
    typeof d.pragma === 'function'
  );
}

function prepare(
  db: SqliteDatabase,
  prefix: string,
): Record<'put' | 'deleteThrough' | 'scanAfter' | 'loadCursor' | 'saveCursor', SqliteStatement> {
  return {
    put: db.prepare(
      `INSERT INTO ${prefix}_frame (outbox_key, epoch, frame) VALUES (?, ?, ?)
       ON CONFLICT (outbox_key, epoch) DO UPDATE SET frame = excluded.frame`,
    ),
    deleteThrough: db.prepare(`DELETE FROM ${prefix}_frame WHERE outbox_key = ? AND epoch <= ?`),
    scanAfter: db.prepare(`SELECT epoch, frame FROM ${prefix}_frame WHERE outbox_key = ? AND epoch > ? ORDER BY epoch`),
    loadCursor: db.prepare(`SELECT cursor FROM ${prefix}_cursor WHERE outbox_key = ?`),
    saveCursor: db.prepare(
      `INSERT INTO ${prefix}_cursor (outbox_key, cursor) VALUES (?, ?)
       ON CONFLICT (outbox_key) DO UPDATE SET cursor = max(cursor, excluded.cursor)`,
    ),
  };
}

function wrap<T>(operation: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new DatabaseError(operation, err);
  }
}
