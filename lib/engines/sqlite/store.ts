import { resolve } from 'node:path';
import { Closed, InvalidOption, TransactionTimeout } from '../../contract/errors.js';
import { SCHEDULES_WAKE_CHANNEL } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS, OUTBOX_QUEUE_OPTS, resolveQueueOpts, type JobOpts, type QueueOpts } from '../../contract/options.js';
import { joinTransactionInput, requireDurationMs, validateKey, validateName } from '../../contract/validate.js';
import type { StoreAdmin } from '../../contract/admin.js';
import type { InboxOpts } from '../../contract/inbox.js';
import type {
  ExternalTx,
  Inbox,
  Lock,
  QueryRunnerLike,
  Outbox,
  Queue,
  RunRetentionOpts,
  RunSchedulesOpts,
  Schedule,
  ScheduleListing,
  ScheduleOpts,
  Store,
  Stream,
  TxHandle,
  TxOps,
  WakeReceiver,
} from '../../contract/types.js';
import { HandoffRegistry } from '../../internal/handoff.js';
import { loadCronIfInstalled } from '../../internal/load-cron.js';
import { InboxHandle, type InboxDriver } from '../../internal/inbox-handle.js';
import { OutboxHandle, type ReceiptDriver } from '../../internal/outbox-handle.js';
import { scheduleInput } from '../../internal/schedule-input.js';
import { OutcomeCounter } from '../../internal/outcome-counter.js';
import { runSchedules, type SchedulerEngine } from '../../internal/scheduler-runner.js';
import { runRetention, type RetentionEngine } from '../../internal/retention-runner.js';
import { WakeHub } from '../../internal/wake-hub.js';
import { SqliteAdmin, writeOutcomes } from './admin.js';
import { isBusy, retryOnBusy, type SqliteConn } from './connection.js';
import type { SqliteCore } from './context.js';
import { DeferredSync } from './deferred-sync.js';
import { activeQueryRunner, ExternalTxOps, syncConnectionOf } from './external-tx.js';
import { sqliteInboxDriver } from './inbox.js';
import { openTxOf, runInOpenTx, type OpenTx } from './tx-context.js';
import { SqliteLock, tryLockRow } from './lock.js';
import { Watcher } from './notify/watcher.js';
import type { ResolvedSqliteOptions } from './options.js';
import { insertJobs } from './queue-ops.js';
import { QueueHandle } from '../shared/queue.js';
import { SqliteQueueDriver } from './queue.js';
import {
  deleteSchedule,
  fireDueSchedules,
  listSchedules,
  readSchedule,
  setSchedulePaused,
  triggerSchedule,
  upsertSchedule,
} from './scheduler.js';
import { SqliteStream } from './stream.js';
import { SqliteTxHandle } from './tx.js';
import { notifyInput, outboxEnqueueInput } from './tx-input.js';
import { WriteTickets } from './write-tickets.js';
import { asStoreError, WriteCtx, Writer } from './writer.js';

/** The SQLite engine's `Store`. */
export class SqliteStore implements Store, SqliteCore {
  readonly engine = 'sqlite' as const;
  readonly random: () => number;
  private isClosed = false;
  private readonly hub = new WakeHub();
  private readonly watcher: Watcher | null;
  private readonly writer: Writer;
  private readonly deferredSync: DeferredSync | null;
  private readonly queueOptsByName = new Map<string, Required<QueueOpts>>();
  private openTx: SqliteTxHandle | null = null;
  readonly outcomes: OutcomeCounter;
  readonly handoff: HandoffRegistry | null;
  readonly maxPayloadBytes: number;
  private readonly adminApi: SqliteAdmin;
  private readonly inboxDriver: InboxDriver & ReceiptDriver = sqliteInboxDriver(
    (op, fn) => this.write(op, fn),
    (op, fn) => this.read(op, fn),
  );

  constructor(
    private readonly options: ResolvedSqliteOptions,
    private readonly writeConn: SqliteConn,
    /** null for `:memory:`: one connection, reads wait for the write mutex. */
    private readonly readConn: SqliteConn | null,
    /** The `synchronous = NORMAL` write connection of deferred claims; null when claims fsync (see DeferredSync). */
    claimConn: SqliteConn | null = null,
  ) {
    this.random = options.random;
    this.handoff = options.localHandoff ? new HandoffRegistry() : null;
    this.maxPayloadBytes = options.maxPayloadBytes;
    this.watcher = readConn ? new Watcher(readConn, this.hub, options.pollIntervalMs, options.logger) : null;
    this.deferredSync = claimConn ? new DeferredSync(claimConn, `${resolve(options.path)}-wal`, options.logger) : null;
    this.writer = new Writer(writeConn, options.memory, options.lockWaitTimeoutMs, {
      isClosed: () => this.isClosed,
      afterCommit: (channels, notifyIds) => {
        if (channels.size === 0) return;
        // Our own commit wakes this process's receivers right here, synchronously after COMMIT
        // (no watcher poll, no timer hop): the rows are committed, so the wake is commit-atomic.
        // The watcher still carries them to other connections/processes; it skips these ids.
        this.watcher?.skipOwn(notifyIds);
        for (const c of channels) this.hub.wake(c);
      },
    }, this.deferredSync, new WriteTickets(options.memory || !options.writeFairness ? null : resolve(options.path)));
    this.outcomes = new OutcomeCounter(
      (rows) => this.write('throughput', (ctx) => writeOutcomes(ctx, rows)),
      (err) => options.logger.warn(`alkstore sqlite: writing throughput counts failed: ${String(err)}`),
    );
    this.adminApi = new SqliteAdmin(this, () => this.assertOpen());
  }

  /** Read and repair operations for dashboards, the CLI and health checks. */
  admin(): StoreAdmin {
    this.assertOpen();
    return this.adminApi;
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
    return retryOnBusy(op, this.options.lockWaitTimeoutMs, () => this.assertOpen(), () => fn(conn), asStoreError);
  }

  listen(channel: string): WakeReceiver {
    this.assertOpen();
    return this.wakes(validateName('channel', channel));
  }

  registeredQueueOpts(queue: string, defaults: Readonly<Required<QueueOpts>>): Required<QueueOpts> {
    return this.queueOptsByName.get(queue) ?? { ...defaults };
  }

  // ---- notify ----

  async notify(channel: string, payload?: string): Promise<void> {
    const c = notifyInput(channel, payload);
    await this.write('notify', (ctx) => ctx.wake(c));
  }

  // ---- handles ----

  stream(name: string): Stream {
    this.assertOpen();
    return new SqliteStream(this, validateName('stream', name));
  }

  queue(name: string, opts?: QueueOpts): Queue {
    this.assertOpen();
    return this.queueHandle(validateName('queue', name), opts, DEFAULT_QUEUE_OPTS);
  }

  outbox(name: string, opts?: QueueOpts): Outbox {
    this.assertOpen();
    return new OutboxHandle(name, (queueName, o) => this.queueHandle(queueName, o, OUTBOX_QUEUE_OPTS), opts, this.inboxDriver);
  }

  inbox(name: string, opts?: InboxOpts): Inbox {
    this.assertOpen();
    return new InboxHandle(name, opts, this.inboxDriver);
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const i = outboxEnqueueInput(this, outbox, payload, opts);
    return this.write('outboxEnqueue', (ctx) => insertJobs(ctx, i.queue, [i.text], i.stamp)[0]);
  }

  // ---- locks ----

  async tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null> {
    return this.lockInternal(validateName('lock', name), owner, ttlMs);
  }

  async runRetention(signal: AbortSignal, opts?: RunRetentionOpts): Promise<void> {
    this.assertOpen();
    const engine: RetentionEngine = {
      // The retention lock is a reserved name: skip user-name validation.
      tryLock: (name, owner, ttlMs) => this.lockInternal(name, owner, ttlMs),
      queue: (name) => this.queue(name),
      outboxQueue: (name) => this.outbox(name).queue,
      queueNames: () => this.admin().queueNames(),
    };
    return runRetention(engine, signal, opts);
  }

  // ---- scheduler ----

  async schedule(name: string, spec: string, queue: string, payload: unknown, opts: ScheduleOpts = {}): Promise<Schedule> {
    this.assertOpen();
    const input = await scheduleInput(name, spec, queue, payload, opts, this.maxPayloadBytes);
    return this.write('schedule', (ctx) => upsertSchedule(ctx, input));
  }

  async unschedule(name: string): Promise<boolean> {
    const n = validateName('schedule', name);
    return this.write('unschedule', (ctx) => deleteSchedule(ctx, n));
  }

  async getSchedule(name: string): Promise<Schedule | null> {
    const n = validateName('schedule', name);
    return this.read('getSchedule', (conn) => readSchedule(conn, n));
  }

  async listSchedules(): Promise<ScheduleListing> {
    this.assertOpen();
    return this.read('listSchedules', (conn) => listSchedules(conn));
  }

  async pauseSchedule(name: string): Promise<boolean> {
    const n = validateName('schedule', name);
    return this.write('pauseSchedule', (ctx) => setSchedulePaused(ctx, n, true));
  }

  async resumeSchedule(name: string): Promise<boolean> {
    const n = validateName('schedule', name);
    await loadCronIfInstalled();
    return this.write('resumeSchedule', (ctx) => setSchedulePaused(ctx, n, false));
  }

  async triggerSchedule(name: string): Promise<number | null> {
    const n = validateName('schedule', name);
    return this.write('triggerSchedule', (ctx) => triggerSchedule(ctx, n, (q, d) => this.registeredQueueOpts(q, d)));
  }

  /** One scheduler tick (the runner calls it); public for tests and custom runners. */
  async fireDue(): Promise<{ now: number; nextFireAt: number | null }> {
    await loadCronIfInstalled();
    return this.write('fireDue', (ctx) => fireDueSchedules(ctx, (q, d) => this.registeredQueueOpts(q, d)));
  }

  async runSchedules(signal: AbortSignal, opts?: RunSchedulesOpts): Promise<void> {
    this.assertOpen();
    const engine: SchedulerEngine = {
      // The leadership lock and the schedules channel are reserved names: skip user-name validation.
      tryLock: (name, owner, ttlMs) => this.lockInternal(name, owner, ttlMs),
      listen: (channel) => this.wakes(channel),
      fireDue: () => this.fireDue(),
      wake: () => this.write('wake', (ctx) => ctx.wake(SCHEDULES_WAKE_CHANNEL)),
    };
    return runSchedules(engine, signal, opts);
  }

  // ---- transactions ----

  beginTx(): Promise<TxHandle> {
    return this.openTxHandle('beginTx()');
  }

  withTx<T>(fn: (tx: TxHandle) => Promise<T>): Promise<T>;
  withTx(external: ExternalTx): TxOps;
  withTx<T>(arg: ((tx: TxHandle) => Promise<T>) | ExternalTx): Promise<T> | TxOps {
    if (typeof arg === 'function') return this.runInTx(arg);
    this.assertOpen();
    const runner = activeQueryRunner(arg);
    const open = openTxOf(this.writer);
    if (open?.joined?.runner === runner) return open.joined.ops;
    throw new InvalidOption(
      'withTx(external)',
      'on SQLite joins only a transaction the store opened itself: run it as store.joinTransaction((body) => dataSource.transaction(body), async (tx, em) => …) (or runTransaction(dataSource, store, fn), or AlkstoreTransactions.run(fn) in Nest). TypeORM runs every transaction of a SQLite DataSource on one connection without serializing them, so two overlapping dataSource.transaction calls share one transaction and one rollback can undo the other\'s business rows or outbox messages; joinTransaction runs them one at a time through the store\'s write path',
    );
  }

  async joinTransaction<X extends ExternalTx, T>(open: (body: (external: X) => Promise<T>) => Promise<T>, fn: (tx: TxOps, external: X) => Promise<T>): Promise<T> {
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
      return await open(async (external) => {
        check();
        const runner = activeQueryRunner(external);
        const ops = new ExternalTxOps(this, runner, check);
        current = { runner };
        await ops.takeWriteLock();
        const tx: OpenTx = { owner: this.writer, label, active: true, joined: { runner, ops } };
        const result = await runInOpenTx(tx, () => fn(ops, external));
        check();
        return result;
      });
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
    this.isClosed = true;
    this.hub.closeAll();
    this.watcher?.stop();
    this.openTx?.abandon();
    this.writer.rollbackQuietly();
    this.writeLastOutcomes();
    this.deferredSync?.close();
    this.readConn?.close();
    this.writeConn.close();
    this.writer.tickets.close();
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
    if (this.isClosed) throw new Closed();
  }

  wakes(channel: string): WakeReceiver {
    this.assertOpen();
    // Dispatch what already committed first, so the new receiver starts from now.
    this.watcher?.catchUp();
    const r = this.hub.listen(channel);
    this.watcher?.ensureRunning();
    return r;
  }

  private async lockInternal(name: string, owner: string, ttlMs: number): Promise<Lock | null> {
    const o = validateKey('owner', owner);
    const ttl = requireDurationMs('ttlMs', ttlMs);
    const expiresAt = await this.write('tryLock', (ctx) => tryLockRow(ctx, name, o, ttl));
    return expiresAt === null ? null : new SqliteLock(this, name, o, expiresAt);
  }

  private queueHandle(name: string, opts: QueueOpts | undefined, defaults: Readonly<Required<QueueOpts>>): Queue {
    let resolved: Required<QueueOpts>;
    if (opts !== undefined) {
      resolved = resolveQueueOpts(opts, defaults);
      this.queueOptsByName.set(name, resolved);
    } else {
      resolved = this.registeredQueueOpts(name, defaults);
    }
    return new QueueHandle(new SqliteQueueDriver(this, name), resolved);
  }

  private async openTxHandle(label: string): Promise<SqliteTxHandle> {
    this.assertOpen();
    const tx = new SqliteTxHandle(this, this.writer, (h) => {
      if (this.openTx === h) this.openTx = null;
    }, label);
    await tx.open();
    this.openTx = tx;
    return tx;
  }

  private async runInTx<T>(fn: (tx: TxHandle) => Promise<T>): Promise<T> {
    const label = 'withTx(fn)';
    const tx = await this.openTxHandle(label);
    let result: T;
    try {
      result = await runInOpenTx({ owner: this.writer, label, active: true }, () => fn(tx));
    } catch (err) {
      if (!tx.finished) await tx.rollback();
      throw err;
    }
    // A revoked handle rejects here with its TransactionTimeout.
    if (!tx.finished || tx.revokedError) await tx.commit();
    return result;
  }
}
