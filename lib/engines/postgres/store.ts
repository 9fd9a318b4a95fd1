import { randomUUID } from 'node:crypto';
import type { WorkflowSql } from '../../workflows/sql-seam.js';
import { postgresWorkflowSql } from './workflow-sql.js';
import type { Client, Pool, PoolClient } from 'pg';
import { DEFAULT_MAX_PAYLOAD_BYTES, utf8Length } from '../../contract/codec.js';
import { AlkstoreError, Database } from '../../contract/errors.js';
import { LISTENER_RECONNECTED_CHANNEL, outboxQueueName } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS, OUTBOX_QUEUE_OPTS, type JobOpts } from '../../contract/options.js';
import { joinTransactionInput } from '../../contract/validate.js';
import type { QueryRunnerLike, StoreLogger, TxOpen, TxOps, WakeReceiver } from '../../contract/types.js';
import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { InboxDriver } from '../../internal/inbox-handle.js';
import type { ReceiptDriver } from '../../internal/outbox-handle.js';
import { WakeHub } from '../../internal/wake-hub.js';
import type { LockDriver } from '../shared/lock.js';
import type { ScheduleDriver } from '../shared/scheduler.js';
import { StoreBase } from '../shared/store.js';
import type { StreamDriver } from '../shared/stream.js';
import { assertActiveRunner, joinedRunner, type TxDriver } from '../shared/tx.js';
import { PostgresAdmin } from './admin.js';
import { ClaimGate } from './claim-gate.js';
import { engineSql, enqueueJob, notifyChannel, type EngineSql, type PgContext } from './context.js';
import { postgresInboxDriver } from './inbox.js';
import { sweepRateWindows } from './limits.js';
import { postgresRetentionDriver } from './retention.js';
import type { RetentionDriver } from '../../internal/retention-runner.js';
import { OwnWakes } from './notify/own-wakes.js';
import { checkout, ClientExecutor, noop, num, PoolExecutor, QueryRunnerExecutor, type Executor } from './connection.js';
import { ProgressWrites } from '../../contract/results.js';
import { OutcomeCounter } from '../../internal/outcome-counter.js';
import type { PostgresListener } from './notify/listener.js';
import { PgHandoffRegistry, RemoteTakers } from './remote-handoff.js';
import { postgresLockDriver } from './lock.js';
import type { QueueDriver } from '../shared/queue-driver.js';
import { PostgresQueueDriver } from './postgres-driver.js';
import { postgresScheduleDriver } from './scheduler.js';
import { postgresStreamDriver } from './stream.js';
import { PostgresTxHandle, PostgresTxOps } from './tx.js';
import { channelHash } from './schema-sql.js';
import { PostgresLiveness } from './liveness.js';

const LONG_CHANNEL_BYTES = 7_000;

/** Construction parameters of {@link PostgresStore} (resolved by `openPostgresStore`). */
export interface PostgresStoreParts {
  pool: Pool;
  ownsPool: boolean;
  schema: string;
  /** The wake fallback: every receiver is woken this often while LISTEN is unavailable. */
  wakeFallbackMs: number;
  logger: StoreLogger;
  /** Random source in [0, 1) of the retry backoff jitter. */
  random: () => number;
  /** Claims commit without waiting for their WAL flush (`claimDurability: 'deferred'`). Default false. */
  claimDeferred?: boolean;
  /** Plain enqueues may hand jobs straight to this store's idle workers (`localHandoff`). Default true. */
  localHandoff?: boolean;
  /** Largest payload JSON in UTF-8 bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Context headers added to every enqueue (the `enqueueHeaders` store option). Default none. */
  enqueueHeaders?: EnqueueHeadersHook | null;
  /** Keep one pool connection checked out for statements that arrive one at a time (see `PoolExecutor`). Default false. */
  holdConnection?: boolean;
  /** Run statements as named prepared statements (default true; false behind a transaction-mode pooler). */
  prepared?: boolean;
  /** The `messageIdPrefix` option. Default none. */
  messageIdPrefix?: string | null;
  /** Dead worker detection (the `workerLiveness` option; needs the LISTEN connection). Default true. */
  workerLiveness?: boolean;
  /** Idle workers are offered to other processes' enqueues (the `crossProcessHandoff` option; needs `localHandoff`). Default false. */
  crossProcessHandoff?: boolean;
}

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
  client.on('error', (err: Error) =>
    fresh.logger.warn(`alkstore postgres: a transaction connection failed: ${err.message}`),
  );
}

/** The PostgreSQL `Store`. Open it with `openPostgresStore`. */
export class PostgresStore extends StoreBase {
  readonly engine = 'postgres' as const;
  private isClosed = false;
  readonly schema: string;
  private readonly pool: Pool;
  private readonly ownsPool: boolean;
  private readonly sql: EngineSql;
  private readonly exec: PoolExecutor;
  private readonly hub: WakeHub;
  private readonly longChannels = new Map<string, string>();
  private readonly ctx: PgContext;
  private readonly wakeFallbackMs: number;
  readonly logger: StoreLogger;
  protected readonly txDriver: TxDriver = { open: () => this.openTxHandle() };
  readonly maxPayloadBytes: number;
  protected readonly lockDriver: LockDriver;
  protected readonly streamDriver: StreamDriver;
  protected readonly scheduleDriver: ScheduleDriver;
  private listener: PostgresListener | null = null;
  private listenerHealthy = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private closing: Promise<void> | null = null;
  private readonly openTx = new Set<PostgresTxHandle>();
  /** Same-process wakes of this store's own commits (and suppression of their NOTIFY echo). */
  private readonly own: OwnWakes;
  private readonly outcomes: OutcomeCounter;
  protected readonly adminApi: PostgresAdmin;
  private readonly claims = new ClaimGate();
  private readonly prepared: boolean;
  protected readonly inboxDriver: InboxDriver & ReceiptDriver;
  protected readonly messageIdPrefix: string | null;
  protected readonly retentionDriver: RetentionDriver;
  protected readonly workflowSql: WorkflowSql;
  private readonly liveness: PostgresLiveness | null;
  private readonly remote: RemoteTakers | null;

  constructor(parts: PostgresStoreParts) {
    super();
    this.messageIdPrefix = parts.messageIdPrefix ?? null;
    this.pool = parts.pool;
    this.ownsPool = parts.ownsPool;
    this.schema = parts.schema;
    this.wakeFallbackMs = parts.wakeFallbackMs;
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
    this.liveness =
      parts.workerLiveness === false
        ? null
        : new PostgresLiveness(
            {
              exec: this.exec,
              sql: this.sql,
              claims: this.claims,
              hub: this.hub,
              logger: this.logger,
              session: () => this.listener?.session() ?? null,
            },
            this.sql.schema,
          );
    this.remote =
      parts.localHandoff === false || parts.crossProcessHandoff === false
        ? null
        : new RemoteTakers({
            exec: this.exec,
            schema: this.sql.schema,
            logger: this.logger,
            liveness: this.liveness,
            session: () => this.listener?.session() ?? null,
            listening: () => this.listenerHealthy,
            driver: (queue) => this.queueDriver(queue),
          });
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const store = this;
    this.ctx = {
      sql: this.sql,
      exec: this.exec,
      hub: this.hub,
      outcomes: this.outcomes,
      progressWrites: new ProgressWrites(),
      guard: () => this.guard(),
      queueOpts: (queue, defaults = DEFAULT_QUEUE_OPTS) => this.registeredQueueOpts(queue, defaults),
      random: parts.random,
      claims: this.claims,
      claimDeferred: parts.claimDeferred ?? false,
      inTransaction: (fn) => this.inTransaction(fn),
      handoff: parts.localHandoff === false ? null : new PgHandoffRegistry(this.remote),
      remote: this.remote,
      maxPayloadBytes: parts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
      enqueueHeaders: parts.enqueueHeaders ?? null,
      liveness: this.liveness,
      get pollFallbackMs() {
        return store.listenerHealthy ? undefined : store.wakeFallbackMs;
      },
    };
    this.maxPayloadBytes = this.ctx.maxPayloadBytes;
    this.lockDriver = postgresLockDriver(this.ctx);
    this.streamDriver = postgresStreamDriver(this.ctx);
    this.scheduleDriver = postgresScheduleDriver(this.ctx);
    this.inboxDriver = postgresInboxDriver(this.ctx);
    this.retentionDriver = postgresRetentionDriver(this.ctx);
    this.workflowSql = postgresWorkflowSql(this.ctx, this.ctx.exec, () => this.ctx.guard());
    this.adminApi = new PostgresAdmin(this.ctx, () =>
      this.listener === null ? 'none' : this.listenerHealthy ? 'connected' : 'down',
    );
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * Attaches the LISTEN connection (or starts polling when there is none) and logs where wakes come
   * from, in one line. `verify` checks the first LISTEN connection (see `PostgresListener.start`).
   * Called once by `openPostgresStore`.
   */
  async attachListener(
    listener: PostgresListener | null,
    wakesFrom: string,
    verify?: (client: Client) => Promise<void>,
  ): Promise<void> {
    this.listener = listener;
    if (!listener) {
      this.logger.log(`alkstore postgres: ${wakesFrom}; wakes come from polling every ${this.wakeFallbackMs} ms`);
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
    else if (payload.startsWith('x:')) this.remote?.notified(payload);
    else if (payload.startsWith('r:')) this.remote?.announced(payload.slice(2));
    else if (payload.startsWith('h:')) {
      const channel = this.longChannels.get(payload.slice(2));
      if (channel !== undefined) this.hub.wake(channel);
    }
  }

  /** Listener callback: LISTEN is back after a gap. Own channel first, then the reserved one, so neither overwrites the other's meaning. */
  reconnected(): void {
    this.liveness?.sessionRenewed();
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
    if (on && !this.pollTimer && !this.isClosed) {
      // Without LISTEN every receiver gets a periodic wake and re-reads: correct, just slower.
      this.pollTimer = setInterval(() => this.hub.wakeAll(), this.wakeFallbackMs);
      this.pollTimer.unref();
    } else if (!on && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = null;
    }
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

  wakes(channel: string): WakeReceiver {
    this.guard();
    return this.hub.listen(channel);
  }

  // ── queues and outboxes ─────────────────────────────────────────────

  protected sweepRateWindows(): Promise<number> {
    this.guard();
    return sweepRateWindows(this.ctx, this.exec, null);
  }

  protected queueDriver(name: string): QueueDriver {
    return new PostgresQueueDriver(this.ctx, name);
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    this.guard();
    const queue = outboxQueueName(outbox);
    return enqueueJob(this.ctx, this.exec, queue, this.ctx.queueOpts(queue, OUTBOX_QUEUE_OPTS), payload, opts);
  }

  // ── transactions ────────────────────────────────────────────────────

  private async openTxHandle(): Promise<PostgresTxHandle> {
    this.guard();
    const client = await this.connect();
    try {
      await client.query('BEGIN');
    } catch (err) {
      client.release(err instanceof Error ? err : true);
      throw new Database('BEGIN', err);
    }
    const tx = new PostgresTxHandle(
      this.ctx,
      new ClientExecutor(client, this.own.forTransaction(), this.prepared),
      (t) => this.openTx.delete(t),
    );
    this.openTx.add(tx);
    return tx;
  }

  async joinTransaction<H, T>(open: TxOpen<H>, fn: (tx: TxOps, handle: H) => Promise<T>): Promise<T> {
    this.guard();
    joinTransactionInput(open, fn);
    // Each caller's transaction has a pooled connection of its own: nothing to serialize.
    return open(async (joined) => fn(new ExternalTxOps(this.ctx, joinedRunner(joined)), joined.handle), {
      engine: this.engine,
    });
  }

  private async connect(): Promise<PoolClient> {
    let client: PoolClient;
    // A connection the executor holds between statements goes back first, so this checkout never waits for it.
    this.exec.yieldHeld();
    try {
      client = await checkout(this.pool);
    } catch (err) {
      throw new Database('acquiring a connection from the pool', err);
    }
    // pg-pool listens for errors only on idle clients; a checked-out client whose backend dies
    // between statements (idle in transaction) would otherwise crash the process with an
    // unhandled 'error' event. The next statement on it fails and the caller sees Database.
    guardClient(client, this.logger);
    client.removeListener('error', noop);
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
      // Buffered throughput counts and progress values not written yet go out while the pool is
      // still usable (best effort; a progress write is fenced, so a claim lost meanwhile drops it).
      const flushed = Promise.all([this.outcomes.flush().catch(() => undefined), this.ctx.progressWrites.flush()]);
      this.isClosed = true;
      this.closing = flushed.then(() => this.shutdown());
    }
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.liveness?.close();
    this.remote?.close();
    this.outcomes.stop();
    this.setPolling(false);
    this.hub.closeAll();
    this.own.reset();
    // Transactions still open are rolled back; their handles then refuse with Closed.
    await Promise.all([...this.openTx].map((tx) => tx.rollback().catch(() => undefined)));
    await this.listener?.close();
    this.exec.close();
    if (this.ownsPool)
      await this.pool
        .end()
        .catch((err: unknown) => this.logger.warn(`alkstore postgres: ending the pool failed: ${String(err)}`));
  }
}

/** `joinTransaction`'s operations: every op first checks the caller's transaction is still active. */
class ExternalTxOps extends PostgresTxOps {
  constructor(
    ctx: PgContext,
    private readonly runner: QueryRunnerLike,
  ) {
    super(ctx, new QueryRunnerExecutor(runner));
  }

  protected override check(): void {
    super.check();
    assertActiveRunner(this.runner);
  }
}
