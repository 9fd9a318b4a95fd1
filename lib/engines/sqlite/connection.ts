// Connections on SQLite: a synchronous connection to the file with busy retries and the database clock;
// PostgreSQL's connection.ts runs statements on pooled clients.
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Database as DatabaseError } from '../../contract/errors.js';
import { loadBetterSqlite3 } from '../../internal/load-better-sqlite3.js';
import { MissingPeer } from '../../internal/load-peer.js';
import {
  resolveOpener,
  type SqliteDatabase,
  type SqliteDriverName,
  type SqliteOpener,
  type SqliteStatement,
} from './binding.js';

/** The database clock in epoch milliseconds (docs/semantics.md, Time). */
export const NOW_SQL = "SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER)";

type DatabaseCtor = typeof BetterSqlite3;

let driver: Promise<DatabaseCtor> | undefined;

/**
 * Loads better-sqlite3 once; a missing package is a `MissingPeer` error naming
 * it, and a version this Node cannot run (13.x on Node < 22) is
 * `IncompatiblePeer`, refused before its addon loads.
 */
export function loadDriver(): Promise<DatabaseCtor> {
  driver ??= loadBetterSqlite3();
  return driver;
}

let betterProbe: Promise<SqliteOpener> | undefined;

/**
 * better-sqlite3 connections with the engine's settings (no busy wait). The
 * native addon is probed once: a package whose addon does not load on this
 * Node (built for another ABI) is `MissingPeer` saying to rebuild it.
 */
function betterSqlite3Opener(): Promise<SqliteOpener> {
  betterProbe ??= loadDriver().then((Ctor) => {
    try {
      new Ctor(':memory:').close();
    } catch (err) {
      betterProbe = undefined;
      throw new MissingPeer(
        'better-sqlite3',
        err,
        `for the SQLite engine, and its native addon does not load on Node ${process.version} (built for another Node?)`,
        `rebuild it with: npm rebuild better-sqlite3, or use driver: 'node:sqlite' on Node 22.13+`,
      );
    }
    return (path: string, { readonly }: { readonly: boolean }) =>
      new Ctor(path, { timeout: 0, readonly }) as unknown as SqliteDatabase;
  });
  return betterProbe;
}

/** The driver `driver` names (`'auto'`: better-sqlite3 when installed, else node:sqlite). */
export function sqliteOpener(
  driver: 'auto' | SqliteDriverName = 'auto',
): Promise<{ name: SqliteDriverName; open: SqliteOpener; fellBack?: MissingPeer }> {
  return resolveOpener(driver, betterSqlite3Opener);
}

/** One SQLite connection with its prepared statements cached by SQL text. */
export class SqliteConn {
  private readonly cache = new Map<string, SqliteStatement>();
  private readonly plucked = new Map<string, SqliteStatement>();
  private nowStmt: SqliteStatement | undefined;

  constructor(readonly db: SqliteDatabase) {}

  stmt(sql: string): SqliteStatement {
    let s = this.cache.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.cache.set(sql, s);
    }
    return s;
  }

  /** A cached statement that returns the first column only. */
  pluck(sql: string): SqliteStatement {
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
 * is 0, callers retry SQLITE_BUSY asynchronously (see `retryOnBusy`). The
 * file's parent directory is created when missing (`sqlite:./data/app.db` on a
 * fresh checkout). The first statement (PRAGMA synchronous) is a retried write
 * too: another process switching the file to WAL, creating the tables or
 * recovering the WAL after a crash holds a lock it must wait out, up to
 * `lockWaitTimeoutMs`.
 */
export async function openConnection(
  path: string,
  synchronous: 'full' | 'normal',
  {
    lockWaitTimeoutMs = 30_000,
    readonly = false,
    opener,
  }: { lockWaitTimeoutMs?: number; readonly?: boolean; opener?: SqliteOpener } = {},
): Promise<SqliteConn> {
  const open = opener ?? (await sqliteOpener()).open;
  if (!readonly) ensureParentDirectory(path);
  let db: SqliteDatabase;
  try {
    db = open(path, { readonly });
  } catch (err) {
    throw new DatabaseError(`opening SQLite file ${JSON.stringify(path)}`, err);
  }
  const conn = new SqliteConn(db);
  const pragma = `synchronous = ${synchronous === 'full' ? 'FULL' : 'NORMAL'}`;
  try {
    await retryOnBusy(
      `configuring SQLite file ${JSON.stringify(path)}`,
      lockWaitTimeoutMs,
      () => undefined,
      () => {
        db.pragma(pragma);
        return true;
      },
      (op, err) => new DatabaseError(op, err),
    );
  } catch (err) {
    conn.close();
    throw err instanceof DatabaseError
      ? err
      : new DatabaseError(`configuring SQLite file ${JSON.stringify(path)}`, err);
  }
  return conn;
}

/** Whether `path` names a file on disk (not `:memory:`, not better-sqlite3's anonymous temp database ""). */
function isFilePath(path: string): boolean {
  return path !== '' && path !== ':memory:' && !path.startsWith('file:');
}

function ensureParentDirectory(path: string): void {
  if (!isFilePath(path)) return;
  const dir = dirname(resolve(path));
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new DatabaseError(
      `creating the directory ${JSON.stringify(dir)} of SQLite file ${JSON.stringify(path)} (create it, or point the path at a writable directory)`,
      err,
    );
  }
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
      throw new DatabaseError(
        op,
        new Error(`the database stayed locked by another connection for ${timeoutMs} ms (lockWaitTimeoutMs)`),
      );
    }
    await pause(delayMs(attempt));
  }
}
