// Connections on PostgreSQL: statements run on a pool, a held connection or a caller's QueryRunner,
// named-prepared or not; SQLite's connection.ts runs synchronous statements on its own connections.
import type { Pool, PoolClient } from 'pg';
import { AlkstoreError, Database } from '../../contract/errors.js';
import type { QueryRunnerLike } from '../../contract/types.js';
import { NOTIFY_ONLY, type Wakes } from './notify/own-wakes.js';
import type { Sql } from './schema-sql.js';

/** Rows of a statement. int8 columns arrive as strings: callers convert with `Number`. */
export interface Rows<R> {
  rows: R[];
  rowCount: number;
}

/** Where a statement runs: the pool, one pooled client (a transaction), or a caller's query runner. */
export interface Executor {
  /**
   * Whether statements run as named prepared statements (planned once per
   * connection). A caller's query runner cannot: long multi-CTE statements
   * then go through the engine's plpgsql functions instead of being planned
   * on every call.
   */
  readonly prepared: boolean;
  /** How statements on this executor announce wakes (see `OwnWakes`). */
  readonly wakes: Wakes;
  run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>>;
}

/** A named (prepared) statement, or an unnamed one that leaves no state on the server connection. */
function statement(
  sql: Sql,
  values: readonly unknown[],
  prepared: boolean,
): { name?: string; text: string; values: unknown[] } {
  return prepared
    ? { name: sql.name, text: sql.text, values: values as unknown[] }
    : { text: sql.text, values: values as unknown[] };
}

/** Keeps a connection error on a one-off checkout from being an unhandled 'error' event (the statement fails anyway). */
export function noop(): void {}

/**
 * `pool.connect()` with `noop` already listening for 'error' when the promise resolves (the caller
 * removes it before the release). The listener is attached inside pg-pool's callback, which runs
 * synchronously when a new connection's first ReadyForQuery is parsed: a backend terminated right
 * after it connected sends its FATAL in the same read, and that error is emitted before any code
 * after an `await pool.connect()` runs, on a client nobody listened to yet (an unhandled 'error'
 * that ends the process; the network-cut fault test once hit it).
 */
export function checkout(pool: Pool): Promise<PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((err, client) => {
      if (err || client === undefined) return reject(err ?? new Error('the pool gave no client'));
      client.on('error', noop);
      resolve(client);
    });
  });
}

function wrap(sql: Sql, err: unknown): never {
  if (err instanceof AlkstoreError) throw err;
  throw new Database(`postgres statement ${sql.name}`, err);
}

/**
 * Whether `err` (thrown by a statement) means the connection itself is gone or unusable: anything
 * that is not a server error with an SQLSTATE (a socket error, "Connection terminated", a
 * timeout), and the server errors that end the session (class 08 connection exception, 57P01–03
 * shutdown or termination). A plain statement error (23505, 40P01, 22P02, …) is not.
 */
export function isConnectionError(err: unknown): boolean {
  if (err === undefined || err === null) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03';
}

/** How long the held connection may stay unused before it goes back to the pool (ms). */
export const HELD_IDLE_MS = 1_000;
/**
 * Longest a pool connection keeps the plans it cached for prepared statements before the executor
 * sends `DISCARD PLANS` ahead of its next statement. PostgreSQL settles a prepared statement on one
 * generic plan per connection, costed for the table as it was then, and only a change of the table's
 * statistics (ANALYZE, autovacuum) makes it plan again: a plan made while the jobs table was small
 * reads the whole table for a batched ack, 57 ms per ack once the table holds 300,000 rows (dead
 * rows kept by an old snapshot, or a backlog). Re-planning costs the next few executions of each
 * statement a planning pass, once per interval.
 */
export const REPLAN_MS = 30_000;

/**
 * Runs statements on a pool as named (prepared) statements.
 *
 * With `hold` (a pool the store created, of two or more connections), one
 * connection stays checked out for statements that arrive one at a time:
 * `pool.query` checks a connection out and back in around every statement,
 * which costs 30–45 µs of a 0.4 ms round trip on a local server. A statement
 * that finds the held connection busy goes through the pool as before. The
 * held connection goes back to the pool when anyone waits for one (checked
 * after each of its statements, and by {@link yieldHeld} before the store
 * checks one out itself), after {@link HELD_IDLE_MS} unused, on a
 * connection error, and on {@link close}.
 */
export class PoolExecutor implements Executor {
  private held: PoolClient | null = null;
  private heldBusy = false;
  private acquiring = false;
  private closed = false;
  private lastUsed = 0;
  private sweeper: ReturnType<typeof setInterval> | null = null;
  private readonly onHeldError = (): void => {
    // The next statement on it would fail: let the pool drop it (pg-pool ends a client released with an error).
    const c = this.held;
    if (c === null) return;
    this.held = null;
    c.removeListener('error', this.onHeldError);
    c.on('error', noop); // a second report of the same failure must not go unhandled either
    if (!this.heldBusy) c.release(true);
    else this.heldBusy = false; // released by the statement that is still on it
  };

  /** When (`performance.now()`) each pool connection started its current plans (see {@link REPLAN_MS}). */
  private readonly plannedAt = new WeakMap<PoolClient, number>();

  constructor(
    private readonly pool: Pool,
    readonly wakes: Wakes = NOTIFY_ONLY,
    private readonly hold = false,
    /** False behind a transaction-mode pooler: a statement prepared on one server connection is unknown on the next. */
    readonly prepared = true,
    private readonly replanMs = REPLAN_MS,
  ) {}

  async run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>> {
    const q = statement(sql, values, this.prepared);
    let held = this.takeHeld();
    /** A one-off checkout (the held slot was taken meanwhile, or someone waits): released after the statement. */
    let once: PoolClient | null = null;
    let failed: unknown = undefined;
    try {
      if (held === null && this.canAdopt()) {
        // The first statement checks a connection out itself and keeps it, instead of racing a separate checkout.
        this.acquiring = true;
        let c: PoolClient;
        try {
          c = await checkout(this.pool);
        } finally {
          this.acquiring = false;
        }
        if (this.closed || this.held !== null || this.pool.waitingCount > 0) {
          once = c;
        } else {
          this.adopt(c);
          held = c;
        }
      }
      if (held === null && once === null) {
        // A checkout for this statement alone (what pool.query does), so its plans can be checked first.
        once = await checkout(this.pool);
      }
      const conn = (held ?? once)!;
      if (this.plansStale(conn)) await conn.query('DISCARD PLANS');
      const r = await conn.query(q);
      return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
    } catch (err) {
      failed = err;
      return wrap(sql, err);
    } finally {
      if (once !== null) {
        once.removeListener('error', noop);
        // A statement error (a constraint, a cast, a lock timeout) leaves the connection good:
        // only a connection error makes pg-pool destroy it instead of keeping it idle.
        once.release(isConnectionError(failed) ? (failed as Error) : undefined);
      }
      if (held !== null) this.putBack(held, failed);
    }
  }

  /** Before the store checks a connection out itself: hand the held one back if it is free. */
  yieldHeld(): void {
    if (this.held !== null && !this.heldBusy) this.releaseHeld();
  }

  /** Returns the held connection to the pool; later statements use the pool. */
  close(): void {
    this.closed = true;
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
    if (this.held !== null && !this.heldBusy) this.releaseHeld();
  }

  private takeHeld(): PoolClient | null {
    const c = this.held;
    if (c === null || this.heldBusy || this.closed) return null;
    this.heldBusy = true;
    return c;
  }

  /** Whether this statement should check a connection out and keep it: only while nobody waits for one. */
  private canAdopt(): boolean {
    return this.hold && !this.closed && this.held === null && !this.acquiring && this.pool.waitingCount === 0;
  }

  private adopt(c: PoolClient): void {
    c.removeListener('error', noop);
    c.on('error', this.onHeldError);
    this.held = c;
    this.heldBusy = true;
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => this.sweep(), HELD_IDLE_MS);
      this.sweeper.unref();
    }
  }

  private putBack(client: PoolClient, failed: unknown): void {
    if (client !== this.held) {
      // Dropped after a connection error while this statement ran on it.
      client.release(true);
      return;
    }
    if (isConnectionError(failed)) {
      // Its error event may have come before this executor listened: drop it as that event would.
      this.onHeldError();
      client.release(failed as Error);
      return;
    }
    this.heldBusy = false;
    this.lastUsed = performance.now();
    if (this.closed || this.pool.waitingCount > 0) this.releaseHeld();
  }

  private releaseHeld(): void {
    const c = this.held;
    if (c === null) return;
    this.held = null;
    this.heldBusy = false;
    c.removeListener('error', this.onHeldError);
    c.release();
  }

  /**
   * Whether `c`'s plans are older than `replanMs` ({@link REPLAN_MS}), so it gets `DISCARD PLANS` first
   * (one more round trip per connection and interval); the new plans count from now. Unnamed
   * statements (behind a pooler) are planned every time.
   */
  private plansStale(c: PoolClient): boolean {
    if (!this.prepared) return false;
    const now = performance.now();
    const at = this.plannedAt.get(c);
    if (at !== undefined && now - at < this.replanMs) return false;
    this.plannedAt.set(c, now);
    return at !== undefined;
  }

  private sweep(): void {
    if (this.held !== null && !this.heldBusy && performance.now() - this.lastUsed >= HELD_IDLE_MS) this.releaseHeld();
  }
}

/** Runs statements on one checked-out client (an engine-owned transaction). */
export class ClientExecutor implements Executor {
  constructor(
    readonly client: PoolClient,
    readonly wakes: Wakes = NOTIFY_ONLY,
    readonly prepared = true,
  ) {}

  async run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>> {
    try {
      const r = await this.client.query(statement(sql, values, this.prepared));
      return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
    } catch (err) {
      wrap(sql, err);
    }
  }
}

/**
 * Runs statements through a caller's TypeORM `QueryRunner` (never prepared: the
 * runner owns its connection). TypeORM 1.x's postgres runner returns, with
 * `useStructuredResult = true`, `{ records, affected }`; without it, `rows` for
 * SELECT/INSERT and `[rows, rowCount]` for UPDATE/DELETE. Both are understood,
 * as is a raw `pg` result, so any runner shaped like TypeORM's works.
 */
export class QueryRunnerExecutor implements Executor {
  readonly prepared = false;
  readonly wakes: Wakes = NOTIFY_ONLY;
  constructor(private readonly runner: QueryRunnerLike) {}

  async run<R>(sql: Sql, values: readonly unknown[]): Promise<Rows<R>> {
    let raw: unknown;
    try {
      raw = await this.runner.query(sql.text, [...values], true);
    } catch (err) {
      wrap(sql, err);
    }
    return normalize<R>(raw);
  }
}

function normalize<R>(raw: unknown): Rows<R> {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const o = raw as { records?: unknown; affected?: unknown; rows?: unknown; rowCount?: unknown };
    if (Array.isArray(o.records)) {
      return { rows: o.records as R[], rowCount: typeof o.affected === 'number' ? o.affected : o.records.length };
    }
    if (Array.isArray(o.rows))
      return { rows: o.rows as R[], rowCount: typeof o.rowCount === 'number' ? o.rowCount : o.rows.length };
    return { rows: [], rowCount: typeof o.affected === 'number' ? o.affected : 0 };
  }
  if (Array.isArray(raw)) {
    if (raw.length === 2 && Array.isArray(raw[0]) && typeof raw[1] === 'number')
      return { rows: raw[0] as R[], rowCount: raw[1] };
    return { rows: raw as R[], rowCount: raw.length };
  }
  return { rows: [], rowCount: 0 };
}

/** int8 / numeric text → number; null stays null. */
export { num, numOrNull } from '../shared/rows.js';
