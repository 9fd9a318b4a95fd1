import { resolve } from 'node:path';
import type { WorkflowSql } from '../../workflows/sql-seam.js';
import { runOn, sqliteWorkflowSql, sqliteWorkflowWrites } from './workflow-sql.js';
import { Closed, TransactionTimeout } from '../../contract/errors.js';
import type { JobOpts } from '../../contract/options.js';
import { joinTransactionInput } from '../../contract/validate.js';
import type { QueryRunnerLike, StoreLogger, TxOpen, TxOps, WakeReceiver } from '../../contract/types.js';
import { HandoffRegistry } from '../../internal/handoff.js';
import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { InboxDriver } from '../../internal/inbox-handle.js';
import type { ReceiptDriver } from '../../internal/outbox-handle.js';
import { ProgressWrites } from '../../contract/results.js';
import { OutcomeCounter } from '../../internal/outcome-counter.js';
import { WakeHub } from '../../internal/wake-hub.js';
import type { LockDriver } from '../shared/lock.js';
import type { ScheduleDriver } from '../shared/scheduler.js';
import { StoreBase } from '../shared/store.js';
import type { StreamDriver } from '../shared/stream.js';
import { joinedRunner, type TxDriver } from '../shared/tx.js';
import { SqliteAdmin, writeOutcomes } from './admin.js';
import { isBusy, retryOnBusy, type SqliteConn } from './connection.js';
import type { SqliteCore } from './context.js';
import { DeferredSync } from './deferred-sync.js';
import { ExternalTxOps, syncConnectionOf } from './external-tx.js';
import { sqliteInboxDriver } from './inbox.js';
import { sqliteRetentionDriver } from './retention.js';
import type { RetentionDriver } from '../../internal/retention-runner.js';
import { runInOpenTx, type OpenTx } from './tx-context.js';
import { sweepRateWindows } from './limits.js';
import { sqliteLockDriver } from './lock.js';
import { Watcher } from './notify/listener.js';
import { WakeFile } from './notify/poke.js';
import type { ResolvedSqliteOptions } from './options.js';
import { insertJobs } from './queue-ops.js';
import type { QueueDriver } from '../shared/queue-driver.js';
import { SqliteQueueDriver } from './sqlite-driver.js';
import { sqliteScheduleDriver } from './scheduler.js';
import { sqliteStreamDriver } from './stream.js';
import { SqliteTxHandle } from './tx.js';
import { notifyInput, outboxEnqueueInput } from './tx-input.js';
import { WriteTickets } from './write-tickets.js';
import { SqliteLiveness } from './liveness.js';
import { asStoreError, WriteCtx, Writer } from './writer.js';

const WITH_TX = 'withTx(fn)';

/** The SQLite engine's `Store`. */
export class SqliteStore extends StoreBase implements SqliteCore {
  readonly engine = 'sqlite' as const;
  readonly random: () => number;
  private isClosed = false;
  private readonly hub = new WakeHub();
  private readonly watcher: Watcher | null;
  /** This store's file in `<database>-alkwake/`: poked after commits that wrote wake rows (file mode only). */
  private readonly wakeFile: WakeFile | null;
  private readonly writer: Writer;
  private readonly deferredSync: DeferredSync | null;
  private openTx: SqliteTxHandle | null = null;
  readonly outcomes: OutcomeCounter;
  readonly progressWrites = new ProgressWrites();
  readonly handoff: HandoffRegistry | null;
  readonly maxPayloadBytes: number;
  protected readonly adminApi: SqliteAdmin;
  readonly logger: StoreLogger;
  readonly enqueueHeaders: EnqueueHeadersHook | null;
  readonly liveness: SqliteLiveness | null;
  protected readonly messageIdPrefix: string | null;
  protected readonly txDriver: TxDriver<SqliteTxHandle> = {
    open: () => this.openTxHandle(WITH_TX),
    // Plain writes of this store inside the callback are refused at once (they would wait for this commit).
    body: (_tx, run) => runInOpenTx({ owner: this.writer, label: WITH_TX, active: true }, run),
  };
  protected readonly lockDriver: LockDriver = sqliteLockDriver(this, () => this.guard());
  protected readonly streamDriver: StreamDriver = sqliteStreamDriver(this, () => this.guard());
  protected readonly scheduleDriver: ScheduleDriver = sqliteScheduleDriver(this);
  protected readonly inboxDriver: InboxDriver & ReceiptDriver = sqliteInboxDriver(
    (op, fn) => this.write(op, fn),
    (op, fn) => this.read(op, fn),
  );
  protected readonly retentionDriver: RetentionDriver = sqliteRetentionDriver(this);
  protected readonly workflowSql: WorkflowSql = {
    ...sqliteWorkflowSql((sql, params, write) =>
      write
        ? this.write('workflows', (ctx) => runOn(ctx.conn, sql, params))
        : this.read('workflows', (conn) => runOn(conn, sql, params)),
    ),
    ...sqliteWorkflowWrites(this, (op, fn) => this.write(op, fn)),
  };

  constructor(
    private readonly options: ResolvedSqliteOptions,
    private readonly writeConn: SqliteConn,
    /** null for `:memory:`: one connection, reads wait for the write mutex. */
    private readonly readConn: SqliteConn | null,
    /** The `synchronous = NORMAL` write connection of deferred claims; null when claims fsync (see DeferredSync). */
    claimConn: SqliteConn | null = null,
  ) {
    super();
    this.messageIdPrefix = options.messageIdPrefix;
    this.logger = options.logger;
    this.random = options.random;
    this.handoff = options.localHandoff ? new HandoffRegistry() : null;
    this.maxPayloadBytes = options.maxPayloadBytes;
    this.enqueueHeaders = options.enqueueHeaders;
    this.wakeFile = options.memory ? null : new WakeFile(`${resolve(options.path)}-alkwake`);
    this.watcher = readConn
      ? new Watcher(readConn, this.hub, options.wakeFallbackMs, options.logger, this.wakeFile)
      : null;
    this.deferredSync = claimConn ? new DeferredSync(claimConn, `${resolve(options.path)}-wal`, options.logger) : null;
    this.writer = new Writer(
      writeConn,
      options.memory,
      options.lockWaitTimeoutMs,
      {
        isClosed: () => this.isClosed,
        afterCommit: (channels, notifyIds) => {
          if (channels.size === 0) return;
          // Our own commit wakes this process's receivers right here, synchronously after COMMIT
          // (no watcher poll, no timer hop): the rows are committed, so the wake is commit-atomic.
          // The watcher still carries them to other connections/processes; it skips these ids.
          this.watcher?.skipOwn(notifyIds);
          for (const c of channels) this.hub.wake(c);
          // Other stores on this file (other processes) read the rows now instead of at their next poll.
          this.wakeFile?.poke();
        },
      },
      this.deferredSync,
      new WriteTickets(options.memory || !options.writeFairness ? null : resolve(options.path)),
    );
    this.outcomes = new OutcomeCounter(
      (rows) => this.write('throughput', (ctx) => writeOutcomes(ctx, rows)),
      (err) => options.logger.warn(`alkstore sqlite: writing throughput counts failed: ${String(err)}`),
    );
    this.adminApi = new SqliteAdmin(this, () => this.assertOpen());
    // One process holds a :memory: database: nobody else could hold its jobs.
    this.liveness =
      options.workerLiveness && !options.memory
        ? new SqliteLiveness(
            (op, fn) => this.write(op, fn),
            (op, fn) => this.read(op, fn),
            options.logger,
          )
        : null;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  // ---- SqliteCore ----

  write<T>(op: string, fn: (ctx: WriteCtx) => T, lazySync = false, urgentLeaseMs?: number): Promise<T> {
    return this.writer.write(op, fn, lazySync, urgentLeaseMs);
  }

  read<T>(op: string, fn: (conn: SqliteConn) => T): Promise<T> {
    if (this.isClosed) return Promise.reject(new Closed());
    const conn = this.readConn;
    if (!conn) return this.writer.exclusive(op, () => fn(this.writeConn));
    try {
      return Promise.resolve(fn(conn));
    } catch (err) {
      if (!isBusy(err)) return Promise.reject(asStoreError(op, err));
    }
    return retryOnBusy(
      op,
      this.options.lockWaitTimeoutMs,
      () => this.assertOpen(),
      () => fn(conn),
      asStoreError,
    );
  }

  // ---- notify ----

  async notify(channel: string, payload?: string): Promise<void> {
    const c = notifyInput(channel, payload);
    await this.write('notify', (ctx) => ctx.wake(c));
  }

  // ---- handles ----

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const i = outboxEnqueueInput(this, outbox, payload, opts);
    return this.write('outboxEnqueue', (ctx) => insertJobs(ctx, i.queue, [i.text], i.stamp)[0]);
  }

  // ---- transactions ----

  async joinTransaction<H, T>(open: TxOpen<H>, fn: (tx: TxOps, handle: H) => Promise<T>): Promise<T> {
    this.assertOpen();
    joinTransactionInput(open, fn);
    const label = 'joinTransaction';
    const openedAt = performance.now();
    let revoked: TransactionTimeout | null = null;
    let current: { runner: QueryRunnerLike } | null = null;
    const hold = await this.writer.holdForApp(label, (leaseMs) => {
      revoked = new TransactionTimeout(label, performance.now() - openedAt, leaseMs);
      // Roll the caller's transaction back now and start an empty one in its place (in one
      // synchronous step, so none of the caller's statements can run between them outside a
      // transaction): the write lock is free for the renewal, and the caller's ORM still sees a
      // transaction, which it rolls back when the body rejects with the TransactionTimeout.
      const db = current ? syncConnectionOf(current.runner) : null;
      if (db?.inTransaction) {
        db.exec('ROLLBACK');
        db.exec('BEGIN');
      }
      hold.release();
    });
    const check = (): void => {
      this.assertOpen();
      if (revoked) throw revoked;
    };
    try {
      const committed = await open(
        async (joined) => {
          check();
          const runner = joinedRunner(joined);
          const ops = new ExternalTxOps(this, runner, check);
          current = { runner };
          await ops.assertSameFile(this.options.memory ? null : this.options.path);
          await ops.takeWriteLock();
          const tx: OpenTx = { owner: this.writer, label, active: true };
          const result = await runInOpenTx(tx, () => fn(ops, joined.handle));
          check();
          return result;
        },
        { engine: this.engine },
      );
      // The caller's ORM committed: other stores' watchers read its wake rows now. This store's
      // receivers learn of it at the next poll, as before the wake file (a store's watcher does
      // not hear its own pokes).
      this.wakeFile?.poke();
      return committed;
    } finally {
      hold.release();
    }
  }

  // ---- misc ----

  now(): Promise<number> {
    return this.read('now', (conn) => conn.now());
  }

  async close(): Promise<void> {
    if (this.isClosed) return;
    // Progress values not written yet go out first, while writes are still taken (fenced: a claim
    // lost meanwhile drops its value). With none, the store closes in this call's synchronous part.
    if (!this.progressWrites.idle) {
      await this.progressWrites.flush();
      if (this.isClosed) return;
    }
    this.isClosed = true;
    this.liveness?.close();
    this.hub.closeAll();
    this.watcher?.stop();
    this.openTx?.abandon();
    this.writer.rollbackQuietly();
    this.writeLastOutcomes();
    this.deferredSync?.close();
    this.readConn?.close();
    this.writeConn.close();
    this.writer.tickets.close();
    this.wakeFile?.close();
  }

  // ---- internals ----

  /** Best effort at close: the last buffered throughput counts, one direct write (skipped if the file is busy). */
  private writeLastOutcomes(): void {
    const rows = this.outcomes.drain();
    const db = this.writeConn.db;
    if (rows.length === 0 || !db.open || db.inTransaction) return;
    try {
      db.exec('BEGIN IMMEDIATE');
      writeOutcomes(new WriteCtx(this.writeConn), rows);
      db.exec('COMMIT');
    } catch {
      if (db.inTransaction) db.exec('ROLLBACK');
    }
  }

  private assertOpen(): void {
    this.guard();
  }

  wakes(channel: string): WakeReceiver {
    this.assertOpen();
    // Dispatch what already committed first, so the new receiver starts from now.
    this.watcher?.catchUp();
    const r = this.hub.listen(channel);
    this.watcher?.ensureRunning();
    return r;
  }

  protected sweepRateWindows(): Promise<number> {
    return this.write('sweepRateWindows', (ctx) => sweepRateWindows(ctx, null));
  }

  protected queueDriver(name: string): QueueDriver {
    return new SqliteQueueDriver(this, name);
  }

  private async openTxHandle(label: string): Promise<SqliteTxHandle> {
    this.assertOpen();
    const tx = new SqliteTxHandle(
      this,
      this.writer,
      (h) => {
        if (this.openTx === h) this.openTx = null;
      },
      label,
    );
    await tx.open();
    this.openTx = tx;
    return tx;
  }
}
