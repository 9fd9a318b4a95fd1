import type BetterSqlite3 from 'better-sqlite3';
import { Database as DatabaseError } from '../../contract/errors.js';
import { loadBetterSqlite3 } from '../../internal/load-better-sqlite3.js';

/** The database clock in epoch milliseconds (docs/semantics.md, Time). */
export const NOW_SQL = "SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)";

type DatabaseCtor = typeof BetterSqlite3;

let driver: Promise<DatabaseCtor> | undefined;

/** Loads better-sqlite3 once; a missing package is `MissingPeer`, one this Node cannot run `IncompatiblePeer`. */
export function loadDriver(): Promise<DatabaseCtor> {
  driver ??= loadBetterSqlite3();
  return driver;
}

/** One better-sqlite3 connection with its prepared statements cached by SQL text. */
export class SqliteConn {
  private readonly cache = new Map<string, BetterSqlite3.Statement>();
  private readonly plucked = new Map<string, BetterSqlite3.Statement>();
  private nowStmt: BetterSqlite3.Statement | undefined;

  constructor(readonly db: BetterSqlite3.Database) {}

  stmt(sql: string): BetterSqlite3.Statement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.cache.set(sql, s);
    }
    return s;
  }

  /** A cached statement that returns the first column only. */
  pluck(sql: string): BetterSqlite3.Statement {
    let s = this.plucked.get(sql);
    if (!s) {
      s = this.db.prepare(sql).pluck();
      this.plucked.set(sql, s);
    }
    return s;
  }

  /** The database clock (epoch ms). */
  now(): number {
    this.nowStmt ??= this.db.prepare(NOW_SQL).pluck();
    return this.nowStmt.get() as number;
  }

  close(): void {
    this.cache.clear();
    this.plucked.clear();
    if (this.db.open) this.db.close();
  }
}

/**
 * Opens a connection that never blocks the event loop on a lock: busy_timeout
 * is 0, callers retry SQLITE_BUSY asynchronously (see `retryBusy`).
 */
export async function openConnection(path: string, synchronous: 'full' | 'normal', readonly = false): Promise<SqliteConn> {
  const Ctor = await loadDriver();
  let db: BetterSqlite3.Database;
  try {
    db = new Ctor(path, { timeout: 0, readonly });
  } catch (err) {
    throw new DatabaseError(`opening SQLite file ${JSON.stringify(path)}`, err);
  }
  const conn = new SqliteConn(db);
  try {
    db.pragma(`synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
  } catch (err) {
    conn.close();
    throw new DatabaseError(`configuring SQLite file ${JSON.stringify(path)}`, err);
  }
  return conn;
}

/** SQLITE_BUSY and its extended codes (BUSY_SNAPSHOT, BUSY_RECOVERY, BUSY_TIMEOUT). */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Backoff between busy retries: immediate twice, then 1, 2, 4 ... 20 ms. */
export function busyDelayMs(attempt: number): number {
  if (attempt < 2) return 0;
  return Math.min(20, 2 ** (attempt - 2));
}

/** Waits without blocking the event loop (setImmediate for 0, else a timer). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => (ms <= 0 ? setImmediate(resolve) : setTimeout(resolve, ms)));
}

/**
 * Calls `step` until it returns a value. SQLITE_BUSY (thrown) or `undefined`
 * (returned) means "locked by another connection": wait asynchronously with a
 * growing backoff and retry until `timeoutMs`, then fail with `Database`.
 * `check` runs before every attempt (it throws `Closed` after close).
 */
export async function retryOnBusy<R>(
  op: string,
  timeoutMs: number,
  check: () => void,
  step: () => R | undefined,
  wrap: (op: string, err: unknown) => Error,
  delayMs: (attempt: number) => number = busyDelayMs,
): Promise<R> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    check();
    let r: R | undefined;
    try {
      r = step();
    } catch (err) {
      if (!isBusy(err)) throw wrap(op, err);
    }
    if (r !== undefined) return r;
    if (Date.now() > deadline) {
      throw new DatabaseError(op, new Error(`the database stayed locked by another connection for ${timeoutMs} ms (lockWaitTimeoutMs)`));
    }
    await pause(delayMs(attempt));
  }
}
