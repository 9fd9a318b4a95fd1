import { randomUUID } from 'node:crypto';
import type { Client, Pool, PoolClient } from 'pg';
import { DEFAULT_MAX_PAYLOAD_BYTES, utf8Length } from '../../contract/codec.js';
import { AlkstoreError, Closed, Database, InvalidOption } from '../../contract/errors.js';
import { LISTENER_RECONNECTED_CHANNEL, SCHEDULES_WAKE_CHANNEL, outboxQueueName } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS, OUTBOX_QUEUE_OPTS, resolveQueueOpts, type JobOpts, type QueueOpts } from '../../contract/options.js';
import { joinTransactionInput, requireDurationMs, validateKey, validateName } from '../../contract/validate.js';
import type { StoreAdmin } from '../../contract/admin.js';
import type { InboxOpts } from '../../contract/inbox.js';
import type {
  ExternalTx,
  Inbox,
  Lock,
  Outbox,
  Queue,
  QueryRunnerLike,
  RunRetentionOpts,
  RunSchedulesOpts,
  Schedule,
  ScheduleListing,
  ScheduleOpts,
  Store,
  StoreLogger,
  Stream,
  TxHandle,
  TxOps,
  WakeReceiver,
} from '../../contract/types.js';
import { loadCronIfInstalled } from '../../internal/load-cron.js';
import { InboxHandle, type InboxDriver } from '../../internal/inbox-handle.js';
import { OutboxHandle, type ReceiptDriver } from '../../internal/outbox-handle.js';
import { scheduleInput } from '../../internal/schedule-input.js';
import { runSchedules, type SchedulerEngine } from '../../internal/scheduler-runner.js';
import { runRetention, type RetentionEngine } from '../../internal/retention-runner.js';
import { WakeHub } from '../../internal/wake-hub.js';
import { PostgresAdmin } from './admin.js';
import { ClaimGate } from './claim-gate.js';
import { always, engineSql, enqueueJob, notifyChannel, type EngineSql, type PgContext } from './context.js';
import { postgresInboxDriver } from './inbox.js';
import { OwnWakes } from './own-wakes.js';
import { ClientExecutor, num, PoolExecutor, QueryRunnerExecutor, type Executor } from './executor.js';
import { OutcomeCounter } from '../../internal/outcome-counter.js';
import type { PostgresListener } from './listener.js';
import { HandoffRegistry } from '../../internal/handoff.js';
import { PostgresLock } from './lock.js';
import { QueueHandle } from '../shared/queue.js';
import { PostgresQueueDriver } from './queue.js';
import { PostgresStream } from './stream.js';
import { PostgresTxHandle, PostgresTxOps } from './tx.js';
import * as pgScheduler from './scheduler.js';
import { channelHash, wakePayload } from './schema-sql.js';

const LONG_CHANNEL_BYTES = 7_000;

/** Construction parameters of {@link PostgresStore} (resolved by `openPostgresStore`). */
export interface PostgresStoreParts {
  pool: Pool;
  ownsPool: boolean;
  schema: string;
  pollIntervalMs: number;
  logger: StoreLogger;
  /** Random source in [0, 1) of the retry backoff jitter. */
  random: () => number;
  /** Claims commit without waiting for their WAL flush (`claimDurability: 'deferred'`). Default false. */
  claimDeferred?: boolean;
  /** Plain enqueues may hand jobs straight to this store's idle workers (`localHandoff`). Default true. */
  localHandoff?: boolean;
  /** Largest payload JSON in UTF-8 bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Keep one pool connection checked out for statements that arrive one at a time (see `PoolExecutor`). Default false. */
  holdConnection?: boolean;
  /** Run statements as named prepared statements (default true; false behind a transaction-mode pooler). */
  prepared?: boolean;
}

/** The PostgreSQL `Store`. Open it with `openPostgresStore`. */
/**
 * The logger that reports a checked-out client's connection error, one per client whatever the
 * number of stores sharing the pool: a caller's pool may serve many stores, and a listener per
 * store per client would pile up (`MaxListenersExceededWarning`). The store that checked the
 * client out last is the one that reports.
 */
const guards = new WeakMap<PoolClient, { logger: StoreLogger }>();

function guardClient(client: PoolClient, logger: StoreLogger): void {
  const guard = guards.get(client);
  if (guard !== undefined) {
    guard.logger = logger;
    return;
  }
  const fresh = { logger };
  guards.set(client, fresh);
  client.on('error', (err: Error) => fresh.logger.warn(`alkstore postgres: a transaction connection failed: ${err.message}`));
}

export class PostgresStore implements Store {
  readonly engine = 'postgres' as const;
  closed = false;
  readonly schema: string;
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  private readonly sql: EngineSql;
  private readonly exec: PoolExecutor;
  private readonly hub: WakeHub;
  private readonly longChannels = new Map<string, string>();
  private readonly registry = new Map<string, Required<QueueOpts>>();
  private readonly ctx: PgContext;
  private readonly pollIntervalMs: number;
  private readonly logger: StoreLogger;
  private listener: PostgresListener | null = null;
  private listenerHealthy = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private closing: Promise<void> | null = null;
  private readonly openTx = new Set<PostgresTxHandle>();
  /** Same-process wakes of this store's own commits (and suppression of their NOTIFY echo). */
  private readonly own: OwnWakes;
  private readonly outcomes: OutcomeCounter;
  private readonly adminApi: PostgresAdmin;
  private readonly claims = new ClaimGate();
  private readonly prepared: boolean;
  private readonly inboxDriver: InboxDriver & ReceiptDriver;

  constructor(parts: PostgresStoreParts) {
    this.pool = parts.pool;
    this.ownsPool = parts.ownsPool;
    this.schema = parts.schema;
    this.pollIntervalMs = parts.pollIntervalMs;
    this.logger = parts.logger;
    this.sql = engineSql(parts.schema);
    // A tag unique to this store among every store on the schema (16 hex digits of a random UUID).
    this.own = new OwnWakes(
      randomUUID().replace(/-/g, '').slice(0, 16),
      (payload) => this.wakeFor(payload),
      () => this.listenerHealthy,
    );
    this.prepared = parts.prepared !== false;
    this.exec = new PoolExecutor(parts.pool, this.own.autocommit, parts.holdConnection === true, this.prepared);
    this.hub = new WakeHub(
      (channel) => {
        if (utf8Length(channel) > LONG_CHANNEL_BYTES) this.longChannels.set(channelHash(channel), channel);
      },
      (channel) => {
        if (utf8Length(channel) > LONG_CHANNEL_BYTES) this.longChannels.delete(channelHash(channel));
      },
    );
    this.outcomes = new OutcomeCounter(
      (rows) => this.adminApi.writeOutcomes(rows),
      (err) => this.logger.warn(`alkstore postgres: writing throughput counts failed: ${String(err)}`),
    );
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const store = this;
    this.ctx = {
      sql: this.sql,
      exec: this.exec,
      hub: this.hub,
      outcomes: this.outcomes,
      guard: () => this.guard(),
      queueOpts: (queue, defaults = DEFAULT_QUEUE_OPTS) => this.registry.get(queue) ?? { ...defaults },
      random: parts.random,
      claims: this.claims,
      claimDeferred: parts.claimDeferred ?? false,
      inTransaction: (fn) => this.inTransaction(fn),
      handoff: parts.localHandoff === false ? null : new HandoffRegistry(),
      maxPayloadBytes: parts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
      get pollFallbackMs() {
        return store.listenerHealthy ? undefined : store.pollIntervalMs;
      },
    };
    this.inboxDriver = postgresInboxDriver(this.ctx);
    this.adminApi = new PostgresAdmin(this.ctx, () => (this.listener === null ? 'none' : this.listenerHealthy ? 'connected' : 'down'));
  }

  /** Read and repair operations for dashboards, the CLI and health checks. */
  admin(): StoreAdmin {
    this.guard();
    return this.adminApi;
  }

  /**
   * Attaches the LISTEN connection (or starts polling when there is none) and logs where wakes come
   * from, in one line. `verify` checks the first LISTEN connection (see `PostgresListener.start`).
   * Called once by `openPostgresStore`.
   */
  async attachListener(listener: PostgresListener | null, wakesFrom: string, verify?: (client: Client) => Promise<void>): Promise<void> {
    this.listener = listener;
    if (!listener) {
      this.logger.log(`alkstore postgres: ${wakesFrom}; wakes come from polling every ${this.pollIntervalMs} ms`);
      this.setPolling(true);
      return;
    }
    await listener.start(verify);
    // A failed first attempt reports no health change (it starts unhealthy): poll until it reconnects.
    // The listener's own warning is then the one line; else this one.
    if (!listener.healthy) this.setPolling(true);
    else this.logger.log(`alkstore postgres: wakes come from LISTEN on ${wakesFrom}`);
  }

  /**
   * Listener callback: a payload on the engine channel. `t<tag>;<payload>` is
   * a tagged wake: the echo of one this store already delivered in-process
   * is dropped (see `OwnWakes`); every other one wakes.
   */
  dispatch(payload: string): void {
    if (payload.startsWith('t')) {
      const end = payload.indexOf(';');
      if (end < 0) return;
      if (!this.own.echo(payload.slice(1, end), payload)) return;
      payload = payload.slice(end + 1);
    }
    this.wakeFor(payload);
  }

  private wakeFor(payload: string): void {
    if (payload.startsWith('c:')) this.hub.wake(payload.slice(2));
    else if (payload.startsWith('s:')) this.claims.invalidate(payload.slice(2));
    else if (payload.startsWith('h:')) {
      const channel = this.longChannels.get(payload.slice(2));
      if (channel !== undefined) this.hub.wake(channel);
    }
  }

  /** Listener callback: LISTEN is back after a gap. Own channel first, then the reserved one, so neither overwrites the other's meaning. */
  reconnected(): void {
    this.own.reset();
    this.hub.wakeAll();
    this.hub.wakeAll(LISTENER_RECONNECTED_CHANNEL);
  }

  /** Listener callback. */
  listenerHealth(healthy: boolean): void {
    this.listenerHealthy = healthy;
    this.claims.setListening(healthy);
    this.setPolling(!healthy);
  }

  private setPolling(on: boolean): void {
    if (on && !this.pollTimer && !this.closed) {
      // Without LISTEN every receiver gets a periodic wake and re-reads: correct, just slower.
      this.pollTimer = setInterval(() => this.hub.wakeAll(), this.pollIntervalMs);
      this.pollTimer.unref();
    } else if (!on && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = null;
    }
  }

  private guard(): void {
    if (this.closed) throw new Closed();
  }

  // ── notify ──────────────────────────────────────────────────────────

  /**
   * Resolves once the notification is committed; this store's receivers are
   * woken at that moment, in-process, and the NOTIFY's echo through this
   * store's LISTEN connection is dropped: a `listen` started after `notify`
   * resolves does not see it ("listen starts from now"). Other stores are
   * woken by the NOTIFY.
   */
  async notify(channel: string, payload?: string): Promise<void> {
    this.guard();
    return notifyChannel(this.ctx, this.exec, channel, payload);
  }

  listen(channel: string): WakeReceiver {
    this.guard();
    validateName('channel', channel);
    return this.hub.listen(channel);
  }

  // ── streams ─────────────────────────────────────────────────────────

  stream(name: string): Stream {
    this.guard();
    return new PostgresStream(this.ctx, validateName('stream', name));
  }

  // ── queues and outboxes ─────────────────────────────────────────────

  queue(name: string, opts?: QueueOpts): Queue {
    this.guard();
    return this.queueHandle(validateName('queue', name), opts, DEFAULT_QUEUE_OPTS);
  }

  private queueHandle(name: string, opts: QueueOpts | undefined, defaults: Readonly<Required<QueueOpts>>): Queue {
    let resolved: Required<QueueOpts>;
    if (opts !== undefined) {
      resolved = resolveQueueOpts(opts, defaults);
      this.registry.set(name, resolved);
    } else {
      resolved = this.registry.get(name) ?? { ...defaults };
    }
    return new QueueHandle(new PostgresQueueDriver(this.ctx, name), resolved);
  }

  outbox(name: string, opts?: QueueOpts): Outbox {
    this.guard();
    return new OutboxHandle(name, (queueName, o) => this.queueHandle(queueName, o, OUTBOX_QUEUE_OPTS), opts, this.inboxDriver);
  }

  inbox(name: string, opts?: InboxOpts): Inbox {
    this.guard();
    return new InboxHandle(name, opts, this.inboxDriver);
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    this.guard();
    const queue = outboxQueueName(outbox);
    return enqueueJob(this.ctx, this.exec, queue, this.ctx.queueOpts(queue, OUTBOX_QUEUE_OPTS), payload, opts);
  }

  // ── locks ───────────────────────────────────────────────────────────

  async tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null> {
    this.guard();
    validateName('lock', name);
    return this.takeLock(name, owner, ttlMs);
  }

  runRetention(signal: AbortSignal, opts?: RunRetentionOpts): Promise<void> {
    try {
      this.guard();
    } catch (err) {
      return Promise.reject(err);
    }
    const engine: RetentionEngine = {
      tryLock: (name, owner, ttlMs) => this.takeLock(name, owner, ttlMs),
      queue: (name) => this.queue(name),
      outboxQueue: (name) => this.outbox(name).queue,
      queueNames: () => this.admin().queueNames(),
    };
    return runRetention(engine, signal, opts);
  }

  /** tryLock without the reserved-name check: the scheduler's own lock is `__alkstore_scheduler`. */
  private async takeLock(name: string, owner: string, ttlMs: number): Promise<Lock | null> {
    this.guard();
    validateKey('owner', owner);
    const ttl = requireDurationMs('ttlMs', ttlMs);
    const r = await this.exec.run<{ owner: string; expires_at: string }>(this.sql.lock.tryLock, [name, owner, ttl]);
    const row = r.rows[0];
    return row ? new PostgresLock(this.ctx, name, owner, num(row.expires_at)) : null;
  }

  // ── scheduler ───────────────────────────────────────────────────────

  async schedule(name: string, spec: string, queue: string, payload: unknown, opts?: ScheduleOpts): Promise<Schedule> {
    this.guard();
    const input = await scheduleInput(name, spec, queue, payload, opts, this.ctx.maxPayloadBytes);
    return pgScheduler.upsertSchedule(this.ctx, input);
  }

  async unschedule(name: string): Promise<boolean> {
    this.guard();
    validateName('schedule', name);
    const r = await this.exec.run(this.sql.schedule.remove, [name]);
    return r.rowCount > 0;
  }

  async getSchedule(name: string): Promise<Schedule | null> {
    this.guard();
    validateName('schedule', name);
    const r = await this.exec.run<pgScheduler.ScheduleRow>(this.sql.schedule.get, [name]);
    return r.rows[0] ? pgScheduler.toSchedule(r.rows[0]) : null;
  }

  runSchedules(signal: AbortSignal, opts?: RunSchedulesOpts): Promise<void> {
    try {
      this.guard();
    } catch (err) {
      return Promise.reject(err);
    }
    const engine: SchedulerEngine = {
      tryLock: (name, owner, ttlMs) => this.takeLock(name, owner, ttlMs),
      listen: (channel) => this.hub.listen(channel),
      fireDue: () => this.fireDue(),
      wake: async () => {
        await this.exec.wakes.run(wakePayload(SCHEDULES_WAKE_CHANNEL), (w) => this.exec.run(this.sql.notify.notify, [w]), always);
      },
    };
    return runSchedules(engine, signal, opts);
  }

  async listSchedules(): Promise<ScheduleListing> {
    this.guard();
    return pgScheduler.listSchedules(this.ctx);
  }

  async pauseSchedule(name: string): Promise<boolean> {
    this.guard();
    return pgScheduler.pauseSchedule(this.ctx, validateName('schedule', name));
  }

  async resumeSchedule(name: string): Promise<boolean> {
    this.guard();
    const n = validateName('schedule', name);
    await loadCronIfInstalled();
    return pgScheduler.resumeSchedule(this.ctx, (fn) => this.inTransaction(fn), n);
  }

  async triggerSchedule(name: string): Promise<number | null> {
    this.guard();
    return pgScheduler.triggerSchedule(this.ctx, validateName('schedule', name));
  }

  /** One scheduler tick (the runner calls it): lock due schedules (SKIP LOCKED), enqueue, advance. */
  async fireDue(): Promise<{ now: number; nextFireAt: number | null }> {
    await loadCronIfInstalled();
    return pgScheduler.fireDue(this.ctx, (fn) => this.inTransaction(fn));
  }

  // ── transactions ────────────────────────────────────────────────────

  async beginTx(): Promise<TxHandle> {
    this.guard();
    const client = await this.connect();
    try {
      await client.query('BEGIN');
    } catch (err) {
      client.release(err instanceof Error ? err : true);
      throw new Database('BEGIN', err);
    }
    const tx = new PostgresTxHandle(this.ctx, new ClientExecutor(client, this.own.forTransaction(), this.prepared), (t) => this.openTx.delete(t));
    this.openTx.add(tx);
    return tx;
  }

  withTx<T>(fn: (tx: TxHandle) => Promise<T>): Promise<T>;
  withTx(external: ExternalTx): TxOps;
  withTx<T>(arg: ((tx: TxHandle) => Promise<T>) | ExternalTx): Promise<T> | TxOps {
    if (typeof arg === 'function') return this.runTx(arg);
    this.guard();
    return new ExternalTxOps(this.ctx, externalRunner(arg));
  }

  async joinTransaction<X extends ExternalTx, T>(open: (body: (external: X) => Promise<T>) => Promise<T>, fn: (tx: TxOps, external: X) => Promise<T>): Promise<T> {
    this.guard();
    joinTransactionInput(open, fn);
    // Each caller's transaction has a pooled connection of its own: nothing to serialize.
    return open((external) => fn(this.withTx(external), external));
  }

  private async runTx<T>(fn: (tx: TxHandle) => Promise<T>): Promise<T> {
    const tx = await this.beginTx();
    let result: T;
    try {
      result = await fn(tx);
    } catch (err) {
      if (!tx.finished) await tx.rollback().catch(() => undefined);
      throw err;
    }
    if (!tx.finished) await tx.commit();
    return result;
  }

  private async connect(): Promise<PoolClient> {
    let client: PoolClient;
    // A connection the executor holds between statements goes back first, so this checkout never waits for it.
    this.exec.yieldHeld();
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw new Database('acquiring a connection from the pool', err);
    }
    // pg-pool listens for errors only on idle clients; a checked-out client whose backend dies
    // between statements (idle in transaction) would otherwise crash the process with an
    // unhandled 'error' event. The next statement on it fails and the caller sees Database.
    guardClient(client, this.logger);
    return client;
  }

  private async inTransaction<T>(fn: (exec: Executor) => Promise<T>): Promise<T> {
    this.guard();
    const client = await this.connect();
    const wakes = this.own.forTransaction();
    try {
      await client.query('BEGIN');
      const result = await fn(new ClientExecutor(client, wakes, this.prepared));
      const done = await client.query('COMMIT');
      client.release();
      // A failed statement the callback caught turns COMMIT into ROLLBACK: then nothing wakes.
      if (done.command === 'COMMIT') wakes.commit();
      else wakes.abandon();
      return result;
    } catch (err) {
      wakes.abandon();
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      if (err instanceof AlkstoreError || err instanceof RangeError) throw err;
      throw new Database('transaction', err);
    }
  }

  async now(): Promise<number> {
    this.guard();
    const r = await this.exec.run<{ ms: string }>(this.sql.notify.now, []);
    return num(r.rows[0]!.ms);
  }

  // ── close ───────────────────────────────────────────────────────────

  close(): Promise<void> {
    if (!this.closing) {
      // Buffered throughput counts go out while the pool is still usable (best effort).
      const flushed = this.outcomes.flush().catch(() => undefined);
      this.closed = true;
      this.closing = flushed.then(() => this.shutdown());
    }
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.outcomes.stop();
    this.setPolling(false);
    this.hub.closeAll();
    this.own.reset();
    // Transactions still open are rolled back; their handles then refuse with Closed.
    await Promise.all([...this.openTx].map((tx) => tx.rollback().catch(() => undefined)));
    await this.listener?.close();
    this.exec.close();
    if (this.ownsPool) await this.pool.end().catch((err: unknown) => this.logger.warn(`alkstore postgres: ending the pool failed: ${String(err)}`));
  }
}

/** `withTx(external)`: every op first checks the caller's transaction is still active. */
class ExternalTxOps extends PostgresTxOps {
  constructor(
    ctx: PgContext,
    private readonly runner: QueryRunnerLike,
  ) {
    super(ctx, new QueryRunnerExecutor(runner));
  }

  protected override check(): void {
    super.check();
    assertActive(this.runner);
  }
}

function assertActive(runner: QueryRunnerLike): void {
  if (runner.isReleased === true) throw new InvalidOption('withTx', 'was given a QueryRunner that is already released (no active transaction)');
  if (runner.isTransactionActive !== true) {
    throw new InvalidOption('withTx', 'was given a QueryRunner with no active transaction; call queryRunner.startTransaction() or use dataSource.transaction(...) first');
  }
}

function externalRunner(arg: ExternalTx): QueryRunnerLike {
  if (arg === null || typeof arg !== 'object') {
    throw new InvalidOption('withTx', 'expects a function, a TypeORM EntityManager or a QueryRunner in an active transaction');
  }
  let runner: QueryRunnerLike | undefined;
  if ('isTransactionActive' in arg && typeof (arg as QueryRunnerLike).query === 'function') runner = arg as QueryRunnerLike;
  else runner = (arg as { queryRunner?: QueryRunnerLike }).queryRunner;
  if (!runner || typeof runner.query !== 'function') {
    throw new InvalidOption(
      'withTx',
      'was given an EntityManager with no active transaction (it has no queryRunner); use the manager handed to dataSource.transaction(...) or queryRunner.manager after startTransaction()',
    );
  }
  assertActive(runner);
  return runner;
}

