import type { FactoryProvider, ModuleMetadata, Type } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { QueueOpts } from '../../contract/options.js';
import type { StoreLogger, TxOpen } from '../../contract/types.js';
import type { PoolerMode } from '../../engines/postgres/pooler.js';
import type { JobMetrics } from '../../metrics/job-metrics.js';

/** Whether this process runs handlers (the `workers` option): see docs/vocabulary.md. */
export type WorkersMode = 'auto' | 'manual' | 'off';

/** Options of the module's automatic retention (`sweepExpired` under leadership). */
export interface AlkstoreRetentionOptions {
  /** Time between sweeps (ms, default 60 000). */
  intervalMs?: number;
  /** Queues to sweep besides those of the application's handlers and schedules. */
  queues?: string[];
  /** Outboxes to sweep besides those of the application's `@OutboxHandler`s. */
  outboxes?: string[];
  /** Inboxes to prune besides those the application opened through the store (`RunRetentionOpts.inboxes`). */
  inboxes?: string[];
  /** How long inbox entries are kept (ms, default 7 days; never below an inbox's floor); `null` keeps them. */
  inboxRetentionMs?: number | null;
  /** How long outbox delivery receipts are kept (ms, default 7 days); `null` keeps them. */
  receiptRetentionMs?: number | null;
  /** How long the dashboard's audit log keeps an entry (ms, default 90 days); `null` keeps it. */
  auditRetentionMs?: number | null;
  /** Streams whose events are removed by age: stream name → how long an event is kept (ms). */
  streamRetention?: Readonly<Record<string, number>>;
}

/** A named handle: a name, a name with queue options, or a `defineQueue` / `defineOutbox` ref. */
export type FeatureHandle = string | { readonly name: string; readonly opts?: QueueOpts };

/** Handles to provide by name, in `forRoot`, `forRootAsync` or `forFeature`. */
export interface AlkstoreFeatureOptions {
  /** Queues injectable with `@InjectQueue(name)`. */
  queues?: FeatureHandle[];
  /** Outboxes injectable with `@InjectOutbox(name)`. */
  outboxes?: FeatureHandle[];
}

/** Options of `AlkstoreModule.forRoot` (or what `forRootAsync` resolves to). */
export interface AlkstoreModuleOptions {
  /**
   * `sqlite:<path>` or `postgres://…`. Either this or `dataSource`.
   */
  url?: string;
  /**
   * A TypeORM `DataSource` to share a database with. SQLite (`better-sqlite3`
   * / `sqlite`): the store opens the same file (`:memory:` is refused: a
   * second connection would see another database). PostgreSQL: the store
   * connects with the DataSource's connection settings (or reuses its pool,
   * see `reusePool`). alkstore never initializes or destroys this DataSource.
   */
  dataSource?: DataSource;
  /**
   * The `open` of your ORM (from `nestjs-alkstore`: `openPrisma(prisma)`, `openDrizzle(db)`,
   * `openKysely(db)`, `openKnex(knex)`, `openPg(pool)`, `openTypeOrm(dataSource)`), whose
   * transactions the `transaction: 'orm'` of `@InboxHandler`, `@InboxEvent` and
   * `AlkstoreWorkflowsModule` join. Set it in `forRootAsync`, which can inject your client. Default:
   * TypeORM, on the module's `dataSource` or the application's DataSource (`TypeOrmModule`) on the
   * same database.
   */
  orm?: TxOpen<unknown>;
  /** PostgreSQL with a DataSource: reuse the DataSource's `pg.Pool` instead of opening one. Default false. */
  reusePool?: boolean;
  /** PostgreSQL: the engine-owned schema (default `alkstore`). */
  schema?: string;
  /** PostgreSQL: apply migrations at open (default true). */
  migrate?: boolean;
  /** PostgreSQL: pool size when the store opens its own pool (default 10). */
  poolSize?: number;
  /** PostgreSQL: `'transaction'` behind a transaction-mode pooler such as PgBouncer (see `PostgresStoreOptions.pooler`). */
  pooler?: PoolerMode;
  /** PostgreSQL: a direct connection URL for LISTEN, past a transaction-mode pooler (see `PostgresStoreOptions.listenUrl`). */
  listenUrl?: string;
  /**
   * Whether handlers run in this process. `'auto'` (default): handlers, dispatchers and the scheduler
   * runner start at bootstrap. `'off'` for API-only replicas: the store is injectable, nothing is
   * claimed. `'manual'` (what `nestjs-alkstore/testing` uses): schedules are stored and the scheduler runner
   * fires them, but no handler runs until a test calls `drain()`. The booleans of 0.2 are refused.
   */
  workers?: WorkersMode;
  /**
   * Run the leader-elected scheduler runner. Default: when `@Scheduled`
   * methods exist. `true` also fires schedules created with `store.schedule()`.
   */
  scheduler?: boolean;
  /**
   * TTL of the scheduler's leadership lock (ms, default 60 000): after a crash of the leading
   * replica, another one leads at most this long after the last renew. A graceful shutdown
   * hands leadership over at once.
   */
  schedulerLockTtlMs?: number;
  /** How often the leading replica renews its lock (ms, default 20 000, at most half the TTL). */
  schedulerRenewIntervalMs?: number;
  /**
   * `'cluster'`: take over `@nestjs/schedule`'s `@Cron` and `@Interval` methods and run each
   * once per boundary across all replicas (instead of importing `ScheduleModule.forRoot()`,
   * which then must not be imported). `@Timeout` methods keep running once per process.
   */
  nestSchedule?: 'cluster';
  /**
   * Owner marker of the schedules this application declares with decorators (default
   * `alkstore:nest`). At bootstrap, schedules with this marker whose method is gone are
   * removed. Applications sharing one database with different decorated methods need
   * different markers.
   */
  scheduleOwner?: string;
  /**
   * Local hand-off (default true): while a `@QueueHandler` of this process is idle on a queue, a plain
   * `queue.enqueue` of this process (no ordering or unique key, due now, not in a transaction; the queue
   * neither paused nor rate-limited) inserts the job already claimed by that handler's worker and starts
   * it without a claim round trip, even when workers of other processes are idle too. `false` turns it
   * off (docs/semantics.md, Queues, Local hand-off).
   */
  localHandoff?: boolean;
  /**
   * Dead worker detection (default true): a job held by a worker whose process died is claimable again
   * within about half a second instead of when its lease runs out; never for a live process. `false`
   * turns it off. The store option of the same name (docs/semantics.md, Queues, Dead workers).
   */
  workerLiveness?: boolean;
  /**
   * Largest queue, outbox, stream or schedule payload in UTF-8 bytes of its JSON (default
   * 1 MiB): a larger one is `PayloadTooLarge` before any write. The store option of the same name.
   */
  maxPayloadBytes?: number;
  /**
   * A readable prefix of the outbox message ids, e.g. the service's name (`orders:<storeId>:<rowId>`):
   * the store option of the same name (docs/brokers.md, Message ids). Default none.
   */
  messageIdPrefix?: string;
  /** The engine's wake fallback (ms): SQLite watcher cadence / PostgreSQL poll when LISTEN is down. */
  pollIntervalMs?: number;
  /** Safety poll of idle workers and dispatchers (ms, default 5000); wakes cut it short. */
  idlePollIntervalMs?: number;
  /** How long `app.close()` waits for in-flight handlers (ms, default 10000). */
  drainTimeoutMs?: number;
  /** Identity of this process's workers in claims (default `<host>:<pid>:<random>`). */
  workerId?: string;
  /**
   * How often this process writes its node heartbeat (ms, 100..600000, default 10 000): its queues
   * with their concurrency and running jobs, for the dashboard's fleet view. A node silent for three
   * intervals shows as gone; the retention runner deletes its row an hour later. `false`: no heartbeat.
   */
  heartbeatIntervalMs?: number | false;
  /** Where the store and the workers log. Default: Nest's `Logger` with context `Alkstore`. */
  logger?: StoreLogger;
  /**
   * Where every worker reports its metrics (see `nestjs-alkstore/observability`: `createPrometheusMetrics`,
   * `createOpenTelemetryMetrics`). Default none: nothing is measured. A handler's own `metrics`
   * option overrides it (`false` turns it off for that handler).
   */
  metrics?: JobMetrics;
  /** How often workers sample `queue.stats()` for the depth gauges when metrics are on (ms, default 10 000). */
  metricsIntervalMs?: number;
  /**
   * Run each handler in an OpenTelemetry span, child of the producer's trace context carried in the
   * job's headers. Default: on when `@opentelemetry/api` is installed; `false` turns it off.
   */
  tracing?: boolean;
  /**
   * Automatic retention (SPEC §10): one replica at a time (lock `__alkstore_retention`) runs
   * `sweepExpired` on every known queue and outbox on an interval, so expiry and dead-letter retention
   * hold without user code. On by default (when `workers` is `'auto'`); `false` turns it off.
   */
  retention?: AlkstoreRetentionOptions | false;
}

/** A class that builds the options, for `forRootAsync({ useClass | useExisting })`. */
export interface AlkstoreOptionsFactory {
  createAlkstoreOptions(): AlkstoreModuleOptions | Promise<AlkstoreModuleOptions>;
}

/**
 * Options of `AlkstoreModule.forRootAsync`. `queues` / `outboxes` sit here,
 * next to the factory, not in what it resolves: Nest needs the provider list
 * before any factory runs.
 */
export interface AlkstoreModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'>, AlkstoreFeatureOptions {
  /** Builds the options from the providers named in `inject`. */
  useFactory?: (...args: never[]) => AlkstoreModuleOptions | Promise<AlkstoreModuleOptions>;
  inject?: FactoryProvider['inject'];
  /** A class implementing {@link AlkstoreOptionsFactory}, instantiated by the module. */
  useClass?: Type<AlkstoreOptionsFactory>;
  /** An already provided {@link AlkstoreOptionsFactory} (from `imports`). */
  useExisting?: Type<AlkstoreOptionsFactory>;
}
