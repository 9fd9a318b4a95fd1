// SQLite only: the binding. The engine speaks to SQLite through one of two synchronous
// drivers, better-sqlite3 (a native addon) or Node's own `node:sqlite` (no
// addon, Node 22.13+). Everything above this file sees the subset below.
import { InvalidOption } from '../../contract/errors.js';
import { MissingPeer } from '../../internal/load-peer.js';

/** A prepared statement: the part of better-sqlite3's `Statement` the engine uses. */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** A statement returning the first column of each row instead of the row. */
  pluck(): SqliteStatement;
}

/** A connection: the part of better-sqlite3's `Database` the engine uses. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  /** `PRAGMA <source>`; with `simple`, the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  /** Wraps `fn` in BEGIN … COMMIT (a savepoint when already in a transaction); ROLLBACK on throw. */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  readonly open: boolean;
  readonly inTransaction: boolean;
  close(): unknown;
}

/** Which driver opens the store's connections. */
export type SqliteDriverName = 'better-sqlite3' | 'node:sqlite';

/** Opens one connection: no busy wait (busy_timeout 0), so a locked file never blocks the event loop. */
export type SqliteOpener = (path: string, options: { readonly: boolean }) => SqliteDatabase;

const DRIVERS: readonly string[] = ['auto', 'better-sqlite3', 'node:sqlite'];

/** `driver` option: `'auto'` (default), `'better-sqlite3'` or `'node:sqlite'`. */
export function validateDriverOption(v: unknown): 'auto' | SqliteDriverName {
  if (v === undefined) return 'auto';
  if (typeof v !== 'string' || !DRIVERS.includes(v)) {
    throw new InvalidOption(
      'driver',
      `must be one of ${DRIVERS.map((d) => JSON.stringify(d)).join(', ')} (got ${typeof v === 'string' ? JSON.stringify(v.slice(0, 40)) : typeof v})`,
    );
  }
  return v as 'auto' | SqliteDriverName;
}

interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean; timeout?: number }) => NodeDatabaseSync;
}

interface NodeStatementSync {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  setReturnArrays?(enabled: boolean): void;
}

interface NodeDatabaseSync {
  prepare(sql: string): NodeStatementSync;
  exec(sql: string): void;
  close(): void;
  readonly isOpen?: boolean;
  readonly isTransaction?: boolean;
}

/** `node:sqlite` when this Node has it (22.13+ without a flag), else null. */
export async function loadNodeSqlite(): Promise<NodeSqliteModule | null> {
  try {
    // A variable specifier: Node 20's types (and Node 20 itself) know no node:sqlite.
    const specifier = 'node:sqlite';
    const mod = (await import(specifier)) as NodeSqliteModule;
    return typeof mod.DatabaseSync === 'function' ? mod : null;
  } catch {
    return null;
  }
}

/** The opener for `driver`; `'auto'` takes better-sqlite3 when it loads and `node:sqlite` otherwise. */
export async function resolveOpener(
  driver: 'auto' | SqliteDriverName,
  loadBetterSqlite3: () => Promise<SqliteOpener>,
): Promise<{ name: SqliteDriverName; open: SqliteOpener; fellBack?: MissingPeer }> {
  if (driver === 'better-sqlite3') return { name: driver, open: await loadBetterSqlite3() };
  if (driver === 'node:sqlite') {
    const mod = await loadNodeSqlite();
    if (mod === null) throw noNodeSqlite(null);
    return { name: driver, open: nodeSqliteOpener(mod) };
  }
  let betterError: unknown;
  try {
    return { name: 'better-sqlite3', open: await loadBetterSqlite3() };
  } catch (err) {
    if (!(err instanceof MissingPeer)) throw err;
    betterError = err;
  }
  const mod = await loadNodeSqlite();
  if (mod === null) throw noNodeSqlite(betterError);
  return { name: 'node:sqlite', open: nodeSqliteOpener(mod), fellBack: betterError as MissingPeer };
}

function noNodeSqlite(betterError: unknown): MissingPeer {
  return new MissingPeer(
    'better-sqlite3',
    betterError ?? null,
    `for the SQLite engine: install better-sqlite3 (npm install better-sqlite3), or run on Node 22.13+ / ` +
      `24, whose built-in node:sqlite this Node ${process.version} does not have (the engine then needs no native addon; driver: 'node:sqlite')`,
  );
}

/** Opens `node:sqlite` connections shaped like better-sqlite3's. */
export function nodeSqliteOpener(mod: NodeSqliteModule): SqliteOpener {
  return (path, { readonly }) => new NodeSqliteDatabase(new mod.DatabaseSync(path, { readOnly: readonly, timeout: 0 }));
}

/**
 * node:sqlite binds every JS number as a REAL; an integral one is bound as an
 * INTEGER here (as better-sqlite3 does), so `LIMIT ?`, `json_array(?)` and
 * typeless columns see the same values on both drivers.
 */
function bindable(v: unknown): unknown {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v)) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = bindable(x);
    return out;
  }
  return v;
}

function bindAll(params: unknown[]): unknown[] {
  return params.map(bindable);
}

/** SQLITE_BUSY and friends carry better-sqlite3's string codes, which the engine's busy retry reads. */
const PRIMARY_CODES: Record<number, string> = {
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  19: 'SQLITE_CONSTRAINT',
  8: 'SQLITE_READONLY',
};

function translated<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    const e = err as { errcode?: unknown; code?: unknown };
    if (typeof e?.errcode === 'number') {
      const primary = PRIMARY_CODES[e.errcode & 0xff];
      if (primary !== undefined) {
        try {
          Object.defineProperty(err, 'code', {
            value: e.errcode === 5 ? primary : `${primary}${e.errcode > 0xff ? `_${e.errcode >> 8}` : ''}`,
            configurable: true,
          });
        } catch {
          // A frozen error keeps its own code.
        }
      }
    }
    throw err;
  }
}

function firstColumn(row: unknown): unknown {
  return Array.isArray(row) ? row[0] : Object.values(row as object)[0];
}

class NodeSqliteStatement implements SqliteStatement {
  constructor(
    private readonly stmt: NodeStatementSync,
    private readonly plucked: boolean,
    private readonly source: () => NodeStatementSync,
  ) {}

  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint } {
    const r = translated(() => this.stmt.run(...bindAll(params)));
    return { changes: Number(r.changes), lastInsertRowid: r.lastInsertRowid };
  }

  get(...params: unknown[]): unknown {
    const row = translated(() => this.stmt.get(...bindAll(params)));
    if (!this.plucked || row === undefined || row === null) return row;
    return firstColumn(row);
  }

  all(...params: unknown[]): unknown[] {
    const rows = translated(() => this.stmt.all(...bindAll(params)));
    return this.plucked ? rows.map(firstColumn) : rows;
  }

  pluck(): SqliteStatement {
    // A statement of its own: return-arrays mode is per statement.
    const s = this.source();
    // Rows as arrays where this Node has it (24, 22.16+); else the first value of each row object.
    s.setReturnArrays?.(true);
    return new NodeSqliteStatement(s, true, this.source);
  }
}

class NodeSqliteDatabase implements SqliteDatabase {
  private depth = 0;

  constructor(private readonly db: NodeDatabaseSync) {}

  get open(): boolean {
    return this.db.isOpen !== false;
  }

  get inTransaction(): boolean {
    return this.db.isTransaction === true;
  }

  prepare(sql: string): SqliteStatement {
    const make = (): NodeStatementSync => translated(() => this.db.prepare(sql));
    return new NodeSqliteStatement(make(), false, make);
  }

  exec(sql: string): unknown {
    translated(() => this.db.exec(sql));
    return this;
  }

  pragma(source: string, options?: { simple?: boolean }): unknown {
    const stmt = this.prepare(`PRAGMA ${source}`);
    if (options?.simple) return stmt.pluck().get();
    return stmt.all();
  }

  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
    return (...args: A): R => {
      const nested = this.inTransaction;
      const name = `alkstore_nested_${this.depth}`;
      this.exec(nested ? `SAVEPOINT ${name}` : 'BEGIN');
      this.depth++;
      try {
        const r = fn(...args);
        this.exec(nested ? `RELEASE ${name}` : 'COMMIT');
        return r;
      } catch (err) {
        if (nested) {
          this.exec(`ROLLBACK TO ${name}`);
          this.exec(`RELEASE ${name}`);
        } else if (this.inTransaction) {
          this.exec('ROLLBACK');
        }
        throw err;
      } finally {
        this.depth--;
      }
    };
  }

  close(): unknown {
    if (this.open) this.db.close();
    return this;
  }
}
