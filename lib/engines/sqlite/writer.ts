// SQLite only: one write connection per store, so writes are queued and group-committed in one BEGIN
// IMMEDIATE each; PostgreSQL runs them concurrently on its pool.
import { AlkstoreError, Closed, Database, TransactionInProgress } from '../../contract/errors.js';
import { busyDelayMs, isBusy, retryOnBusy, type SqliteConn } from './connection.js';
import type { DeferredSync } from './deferred-sync.js';
import { Mutex, type Holder } from './mutex.js';
import { openTxOf } from './tx-context.js';
import { NO_WAKES, NotifyPruner, writeWakes, type OwnWakes } from './notify/notify.sql.js';
import { WriteTickets } from './write-tickets.js';

/** What one write transaction sees: its connection, one database-clock reading, the channels to wake on commit. */
export class WriteCtx {
  private nowMs: number | undefined;

  constructor(
    readonly conn: SqliteConn,
    /** Shared by every op of one `withTx(fn)` handle. */
    readonly channels = new Set<string>(),
  ) {}

  /** The database clock, read once per transaction so every row of it agrees. */
  get now(): number {
    this.nowMs ??= this.conn.now();
    return this.nowMs;
  }

  /** Wake `channel` when this transaction commits (never on rollback). */
  wake(channel: string): void {
    this.channels.add(channel);
  }
}

export interface WriterHooks {
  isClosed(): boolean;
  /**
   * Runs synchronously right after a commit, before the caller's promise
   * settles: `channels` were woken by it, `own` is what it wrote for them
   * (file mode; nothing for `:memory:`).
   */
  afterCommit(channels: ReadonlySet<string>, own: OwnWakes): void;
}

const BUSY = Symbol('busy');
/** Most queued writes committed in one group transaction. */
const MAX_GROUP = 256;
/**
 * Most writes a lone writer (see `Writer.lone`) runs at once in one event-loop turn; the next one
 * waits for the end of the turn, so a sequential producer still lets timers and I/O run.
 */
const LONE_PER_TURN = 16;

interface QueuedWrite {
  op: string;
  lazy: boolean;
  fn: (ctx: WriteCtx) => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Writes the store makes on its own (buffered counters): never refused inside an application transaction's context. */
const INTERNAL_OPS = new Set(['throughput']);

/** An application transaction's hold on the write path (see `Writer.holdForApp`). */
export interface AppHold {
  /** Ends the hold (idempotent): the next writer goes. */
  release(): void;
}

/** Wraps an unexpected failure as `Database`; our own errors and RangeErrors pass through. */
export function asStoreError(op: string, err: unknown): Error {
  if (err instanceof AlkstoreError || err instanceof RangeError) return err;
  return new Database(op, err);
}

/**
 * The store's single write connection. Every write is one synchronous
 * `BEGIN IMMEDIATE … COMMIT` (cross-process claimers serialize on the write
 * lock), taken in turn on an async mutex. SQLITE_BUSY (another process, or an
 * open TypeORM transaction on another connection) is retried asynchronously
 * with a short growing backoff: the event loop is never blocked on a lock.
 */
export class Writer {
  readonly mutex = new Mutex();
  private readonly pruner = new NotifyPruner();
  private readonly queued: QueuedWrite[] = [];
  private flushScheduled = false;
  /** Writes that ran synchronously in this event-loop turn (0: none yet). */
  private turnUsed = 0;
  /**
   * The last group commit held a single write: nothing else wrote in its turn, so the writes come
   * one after another (a sequential producer) and waiting for the end of the turn to share a
   * commit only delays them. While set, a write that finds the connection free runs at once even
   * after another in the same turn (at most {@link LONE_PER_TURN}); a group of two or more clears it.
   */
  private lone = false;

  constructor(
    readonly conn: SqliteConn,
    private readonly memory: boolean,
    private readonly lockWaitTimeoutMs: number,
    private readonly hooks: WriterHooks,
    /** Set when claims may skip the fsync inside COMMIT (file, synchronous FULL, claimDurability 'deferred'). */
    private readonly deferred: DeferredSync | null = null,
    /** Cross-process turn-taking on the write lock (see WriteTickets); a no-op one for `:memory:`. */
    readonly tickets: WriteTickets = new WriteTickets(null),
  ) {}

  /**
   * `BEGIN IMMEDIATE` on `conn`, unless an older waiter of another connection
   * should go first (then BUSY without trying). False when the lock is taken.
   */
  private begin(conn: SqliteConn): boolean {
    if (this.tickets.shouldYield()) {
      this.tickets.touch();
      return false;
    }
    try {
      conn.stmt('BEGIN IMMEDIATE').run();
    } catch (err) {
      if (isBusy(err)) {
        this.tickets.waiting();
        return false;
      }
      throw err;
    }
    this.tickets.done();
    return true;
  }

  /**
   * Runs `fn` as its own unit of work, committed before the promise resolves.
   * The first write of an event-loop turn runs at once, synchronously. Writes
   * that arrive while it is busy, or later in the same turn, are queued and
   * committed together in one transaction at the end of the turn (group
   * commit: one fsync for many workers), each inside its own savepoint so a
   * failing write rolls back alone.
   *
   * `lazySync` (claims): the commit need not wait for its fsync, see
   * `DeferredSync`; a group is lazy only when all of its writes are.
   */
  write<T>(op: string, fn: (ctx: WriteCtx) => T, lazySync = false, urgentLeaseMs?: number): Promise<T> {
    if (this.hooks.isClosed()) return Promise.reject(new Closed());
    const inside = openTxOf(this);
    if (inside !== null && !INTERNAL_OPS.has(op)) return Promise.reject(new TransactionInProgress(op, inside.label));
    const lazy = lazySync && this.deferred !== null;
    // A lazy write (a claim: no fsync in its COMMIT) gains nothing from waiting for the end of the
    // turn to share a commit, so it runs at once whenever the connection is free: a worker woken
    // by a commit claims in the same turn, with no setImmediate hop.
    if (
      (lazy || this.turnUsed === 0 || (this.lone && this.turnUsed < LONE_PER_TURN)) &&
      this.queued.length === 0 &&
      this.mutex.tryAcquire()
    ) {
      if (!lazy) this.markTurn();
      let r: { value: T } | typeof BUSY;
      try {
        r = this.attempt(fn, lazy);
      } catch (err) {
        this.mutex.release();
        return Promise.reject(asStoreError(op, err));
      }
      if (r !== BUSY) {
        this.mutex.release();
        return Promise.resolve(r.value);
      }
      return this.holdAndRetry(op, fn, lazy);
    }
    if (urgentLeaseMs !== undefined) return this.writeUrgent(op, fn, lazy, urgentLeaseMs);
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ op, lazy, fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  private markTurn(): void {
    if (this.turnUsed++ === 0) setImmediate(() => (this.turnUsed = 0));
  }

  /**
   * A lease renewal: queued before every other waiter, and when an application
   * transaction still holds the write path after a quarter of the lease, that
   * transaction is rolled back (`TransactionTimeout`) so the renewal lands in
   * time and no other process reclaims the running job.
   */
  private async writeUrgent<T>(op: string, fn: (ctx: WriteCtx) => T, lazy: boolean, leaseMs: number): Promise<T> {
    const revokeTimer = setTimeout(() => this.mutex.holder?.revoke(leaseMs), Math.max(1, leaseMs / 4));
    try {
      await this.mutex.acquire({ urgent: true, ...this.waitLimit(op) });
    } finally {
      clearTimeout(revokeTimer);
    }
    return this.holdAndRetry(op, fn, lazy);
  }

  /** How long a write waits for the write path held in this process, and the error naming the holder. */
  private waitLimit(op: string): { timeoutMs: number; onTimeout: (holder: Holder | null) => Error } {
    return {
      timeoutMs: this.lockWaitTimeoutMs,
      onTimeout: (holder) =>
        new Database(
          op,
          new Error(
            holder === null
              ? `the store's write path stayed busy for ${this.lockWaitTimeoutMs} ms (lockWaitTimeoutMs)`
              : `waited ${this.lockWaitTimeoutMs} ms (lockWaitTimeoutMs) for the store's write path, held by the ` +
                  `${holder.label} transaction opened ${Math.round(performance.now() - holder.since)} ms ago and still ` +
                  `open: end it (commit or rollback), and inside it write through the transaction's own methods (tx.enqueue, …)`,
          ),
        ),
    };
  }

  /**
   * For an application transaction (`withTx(fn)`, `joinTransaction`):
   * waits for the write path (at most `lockWaitTimeoutMs`) and holds it until
   * `release()`. `revoke` rolls the transaction back when a lease renewal has
   * waited a quarter of its lease; it must end the hold.
   */
  async holdForApp(label: string, revoke: (leaseMs: number) => void): Promise<AppHold> {
    if (this.hooks.isClosed()) throw new Closed();
    const inside = openTxOf(this);
    if (inside !== null) throw new TransactionInProgress(label, inside.label);
    await this.mutex.acquire(this.waitLimit(label));
    if (this.hooks.isClosed()) {
      this.mutex.release();
      throw new Closed();
    }
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      this.mutex.release();
    };
    this.mutex.holder = { label, since: performance.now(), revoke };
    return { release };
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    try {
      await this.mutex.acquire(this.waitLimit('write'));
    } catch (err) {
      // Every write queued so far waited as long: they all fail with the holder named.
      for (const w of this.queued.splice(0)) w.reject(err);
      return;
    }
    const group = this.queued.splice(0, MAX_GROUP);
    if (this.queued.length > 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => void this.flush());
    }
    try {
      if (group.length === 0) return;
      this.lone = group.length === 1;
      if (group.length === 1) {
        // Alone in its turn (a sequential caller): its own transaction, no savepoint.
        const w = group[0]!;
        try {
          const r = await this.retryBusy(w.op, () => {
            const x = this.attempt(w.fn, w.lazy);
            return x === BUSY ? undefined : x;
          });
          w.resolve(r.value);
        } catch (err) {
          w.reject(err instanceof Closed ? err : asStoreError(w.op, err));
        }
        return;
      }
      const lazy = group.every((w) => w.lazy);
      const outcomes = await this.retryBusy('write', () => {
        const r = this.attemptGroup(group, lazy);
        return r === BUSY ? undefined : r;
      });
      group.forEach((w, i) => {
        const o = outcomes[i];
        if (o.ok) w.resolve(o.value);
        else w.reject(asStoreError(w.op, o.error));
      });
    } catch (err) {
      for (const w of group) w.reject(err instanceof Closed ? err : asStoreError(w.op, err));
    } finally {
      this.mutex.release();
    }
  }

  /** One transaction for a group of queued writes, a savepoint each. */
  private attemptGroup(group: readonly QueuedWrite[], lazy: boolean): Outcome[] | typeof BUSY {
    if (lazy && this.deferred) return this.deferred.run((conn) => this.attemptGroupTx(group, conn));
    return this.attemptGroupTx(group, this.conn);
  }

  private attemptGroupTx(group: readonly QueuedWrite[], conn: SqliteConn): Outcome[] | typeof BUSY {
    if (!this.begin(conn)) return BUSY;
    const channels = new Set<string>();
    const outcomes: Outcome[] = [];
    let ids: OwnWakes;
    try {
      for (const w of group) {
        const mine = new Set<string>();
        conn.stmt('SAVEPOINT alkstore_write').run();
        try {
          const value = w.fn(new WriteCtx(conn, mine));
          conn.stmt('RELEASE alkstore_write').run();
          for (const c of mine) channels.add(c);
          outcomes.push({ ok: true, value });
        } catch (error) {
          if (isBusy(error)) throw error;
          conn.stmt('ROLLBACK TO alkstore_write').run();
          conn.stmt('RELEASE alkstore_write').run();
          outcomes.push({ ok: false, error });
        }
      }
      ids = this.flushWakes(new WriteCtx(conn, channels));
      conn.stmt('COMMIT').run();
    } catch (err) {
      this.rollbackQuietly(conn);
      if (isBusy(err)) return BUSY;
      throw err;
    }
    this.hooks.afterCommit(channels, ids);
    return outcomes;
  }

  /** Runs `fn` while holding the mutex, outside any transaction (`:memory:` reads). */
  async exclusive<T>(op: string, fn: () => T): Promise<T> {
    if (this.hooks.isClosed()) throw new Closed();
    const inside = openTxOf(this);
    if (inside !== null) throw new TransactionInProgress(op, inside.label);
    await this.mutex.acquire(this.waitLimit(op));
    try {
      if (this.hooks.isClosed()) throw new Closed();
      return fn();
    } catch (err) {
      throw asStoreError(op, err);
    } finally {
      this.mutex.release();
    }
  }

  /**
   * For `withTx(fn)`: holds the write path (see `holdForApp`) and opens BEGIN
   * IMMEDIATE; the caller ends it with `commitOpen`/`rollbackOpen`.
   */
  async beginOpen(label: string, revoke: (leaseMs: number) => void): Promise<AppHold> {
    const hold = await this.holdForApp(label, revoke);
    try {
      await this.retryBusy(label, () => (this.begin(this.conn) ? true : undefined));
    } catch (err) {
      hold.release();
      throw err;
    }
    return hold;
  }

  commitOpen(ctx: WriteCtx, hold: AppHold): void {
    let ids: OwnWakes;
    try {
      ids = this.flushWakes(ctx);
      this.conn.stmt('COMMIT').run();
    } catch (err) {
      this.rollbackQuietly();
      hold.release();
      throw asStoreError('commit', err);
    }
    hold.release();
    this.hooks.afterCommit(ctx.channels, ids);
  }

  rollbackOpen(hold: AppHold): void {
    this.rollbackQuietly();
    hold.release();
  }

  /** True while a transaction is open on the write connection (a `withTx(fn)` handle). */
  get inTransaction(): boolean {
    return this.conn.db.open && this.conn.db.inTransaction;
  }

  rollbackQuietly(conn: SqliteConn = this.conn): void {
    try {
      if (conn.db.open && conn.db.inTransaction) conn.stmt('ROLLBACK').run();
    } catch {
      // The connection already rolled back (SQLite does so on some errors).
    }
  }

  private async holdAndRetry<T>(op: string, fn: (ctx: WriteCtx) => T, lazy: boolean): Promise<T> {
    try {
      return await this.retryBusy(op, () => {
        const r = this.attempt(fn, lazy);
        return r === BUSY ? undefined : r;
      }).then((r) => r.value);
    } finally {
      this.mutex.release();
    }
  }

  private async retryBusy<R>(op: string, step: () => R | undefined): Promise<R> {
    try {
      // While queued or stepping aside, poll every 1–2 ms: the turn comes as soon as the holder commits.
      return await retryOnBusy(
        op,
        this.lockWaitTimeoutMs,
        () => this.assertOpen(),
        step,
        asStoreError,
        (attempt) => (this.tickets.contended ? Math.min(2, busyDelayMs(attempt)) : busyDelayMs(attempt)),
      );
    } catch (err) {
      this.tickets.done();
      throw err;
    }
  }

  private assertOpen(): void {
    if (this.hooks.isClosed()) throw new Closed();
  }

  private attempt<T>(fn: (ctx: WriteCtx) => T, lazy: boolean): { value: T } | typeof BUSY {
    if (lazy && this.deferred) return this.deferred.run((conn) => this.attemptTx(fn, conn));
    return this.attemptTx(fn, this.conn);
  }

  private attemptTx<T>(fn: (ctx: WriteCtx) => T, conn: SqliteConn): { value: T } | typeof BUSY {
    const ctx = new WriteCtx(conn);
    if (!this.begin(conn)) return BUSY;
    let value: T;
    let ids: OwnWakes;
    try {
      value = fn(ctx);
      ids = this.flushWakes(ctx);
      conn.stmt('COMMIT').run();
    } catch (err) {
      this.rollbackQuietly(conn);
      if (isBusy(err)) return BUSY;
      throw err;
    }
    this.hooks.afterCommit(ctx.channels, ids);
    return { value };
  }

  /** File mode: the wakes go into the transaction (see `writeWakes`). `:memory:` wakes in-process after commit. */
  private flushWakes(ctx: WriteCtx): OwnWakes {
    if (this.memory || ctx.channels.size === 0) return NO_WAKES;
    return writeWakes(ctx.conn, ctx.channels, ctx.now, this.pruner);
  }
}
