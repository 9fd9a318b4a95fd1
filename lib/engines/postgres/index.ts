/**
 * The PostgreSQL engine: `openPostgresStore(options)` and the engine's
 * migrations for teams that apply them with their own tooling.
 */
import type { ClientConfig, Pool } from 'pg';
import { InvalidOption } from '../../contract/errors.js';
import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { Store, StoreLogger } from '../../contract/types.js';
import { asOption, maxPayloadBytesOption, requireBoolean, requireCount, requireFunction, requireTimerMs } from '../../contract/validate.js';
import { loadPeer } from '../../internal/load-peer.js';
import { scrubbingLogger, scrubSecrets, secretForms, urlSecrets } from '../../internal/secrets.js';
import { applyMigrations, verifySchema } from './migrations.js';
import { PostgresListener } from './listener.js';
import { PostgresStore } from './store.js';
import { describeUrl, listenUrlOption, poolerOption, verifyListenConnection, type PoolerMode } from './pooler.js';
import { engineChannel, validateSchemaName } from './schema-sql.js';

export { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, postgresMigrationSql, type PostgresMigration } from './migrations.js';
export { PG_NOTIFY_LIMIT } from './schema-sql.js';
export type { PoolerMode } from './pooler.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user@host:5432/db`. Either this or `pool`. */
  connectionString?: string;
  /**
   * A `pg.Pool` the caller owns: `close()` never ends it. The store's LISTEN
   * connection is a separate client built from the pool's connection options.
   */
  pool?: Pool | unknown;
  /** Engine-owned schema, default `alkstore`. A plain identifier; always quoted in SQL (case is kept). */
  schema?: string;
  /**
   * Apply migrations at open (default true), under a transaction-scoped
   * advisory lock so concurrent boots migrate once. `false`: only check the
   * schema is at the expected version (apply `postgresMigrationSql()` yourself).
   */
  migrate?: boolean;
  /** Pool size when the store creates its pool (default 10). */
  poolSize?: number;
  /** Poll interval while LISTEN is unavailable (ms, default 1000). */
  pollIntervalMs?: number;
  /**
   * Open a LISTEN connection (default true). `false`: every receiver is
   * woken by polling every `pollIntervalMs` instead of on commit.
   */
  listen?: boolean;
  /**
   * What sits between `connectionString` (or `pool`) and PostgreSQL
   * (docs/postgres.md, "Behind a connection pooler"). `'none'` (default) or
   * `'session'` (a session-mode pooler): nothing changes. `'transaction'`
   * (PgBouncer `pool_mode = transaction`, Supavisor on 6543, RDS Proxy):
   * statements run unnamed (no prepared statements left on server
   * connections), and wakes come from LISTEN on `listenUrl` when given, else
   * from polling every `pollIntervalMs`. A store never relies on other
   * session state (no `SET`, session advisory locks or temp tables) in any mode.
   */
  pooler?: PoolerMode;
  /**
   * A `postgres://` URL of a direct connection (past the pooler) for the one
   * LISTEN connection, so wakes still come on commit behind a
   * transaction-mode pooler. A URL that itself goes through a
   * transaction-mode pooler is refused at open (`InvalidOption`).
   */
  listenUrl?: string;
  /**
   * How claims commit (default `'deferred'`). `'deferred'`: a claim's transaction commits with
   * `synchronous_commit = off` (for that transaction only), so it does not wait for its WAL
   * flush; the server flushes it within a few hundred ms, and at the latest with the next
   * durable commit, usually the job's own ack. A crash of this process loses nothing; only a
   * crash of the PostgreSQL server (or its machine) in that window can undo a claim, and then
   * the job is pending again with that attempt uncounted (delivered again, as at-least-once
   * allows). Enqueues, acks, retries and every other write stay durable before they resolve.
   * `'immediate'`: claims wait for their flush like every other write (the server's
   * `synchronous_commit` setting applies). Same option, same meaning as SQLite's.
   */
  claimDurability?: 'deferred' | 'immediate';
  /**
   * Local hand-off (default true): while a worker of this store is idle on a queue (a free
   * slot, its last claim came back short), a plain `queue.enqueue` of this store (no ordering or
   * unique key, due now, not in a transaction) on a queue that is neither paused nor rate-limited
   * inserts the job already claimed by that worker and gives it straight to it: no claim
   * statement and no wake, so the handler starts one round trip sooner. The job then runs in this
   * process even when workers of other processes are idle too. `false`: every enqueue inserts a
   * pending job and workers claim it (docs/semantics.md, Queues). Same option on SQLite.
   */
  localHandoff?: boolean;
  /**
   * Largest queue, outbox, stream or schedule payload, in UTF-8 bytes of its JSON text
   * (default 1 048 576, 1 MiB; at most 2^30). A larger payload is `PayloadTooLarge` at the
   * call, before any write. Same option on both engines.
   */
  maxPayloadBytes?: number;
  /**
   * Adds context headers to every enqueue of this store, e.g. `withTraceContext` from
   * `alkstore/tracing` (after `loadOpenTelemetry()`). `openStore` sets it for you when
   * `@opentelemetry/api` is installed and `tracing` is not false. Default none.
   */
  enqueueHeaders?: EnqueueHeadersHook;
  /** Random source in [0, 1) for retry backoff jitter (tests inject it). Default `Math.random`. */
  random?: () => number;
  logger?: StoreLogger;
}

const defaultLogger: StoreLogger = {
  log: () => undefined,
  warn: (message) => console.warn(message),
  error: (message, error) => console.error(message, error),
};

/**
 * Opens a store on PostgreSQL: validates options, applies (or verifies) the
 * engine schema's migrations, and attaches the LISTEN connection. No error
 * it throws and no line it logs carries the connection's password.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object');
  const secrets = connectionSecrets(options);
  try {
    return await open(options, secrets);
  } catch (err) {
    throw scrubSecrets(err, secrets);
  }
}

function connectionSecrets(options: PostgresStoreOptions): string[] {
  const poolPassword = (options.pool as { options?: { password?: unknown } } | undefined)?.options?.password;
  return [...new Set([...urlSecrets(options.connectionString), ...urlSecrets(options.listenUrl), ...secretForms(poolPassword), ...urlSecrets((options.pool as { options?: { connectionString?: unknown } } | undefined)?.options?.connectionString)])];
}

async function open(options: PostgresStoreOptions, secrets: readonly string[]): Promise<Store> {
  const schema = validateSchemaName(options.schema ?? 'alkstore');
  const hasUrl = options.connectionString !== undefined;
  if (hasUrl === (options.pool !== undefined)) throw new InvalidOption('connectionString', 'or pool is required (exactly one of them)');
  if (hasUrl && (typeof options.connectionString !== 'string' || options.connectionString.length === 0)) {
    throw new InvalidOption('connectionString', 'must be a non-empty string');
  }
  const poolSize = options.poolSize === undefined ? 10 : requireCount('poolSize', options.poolSize, 10_000);
  const pollIntervalMs = options.pollIntervalMs === undefined ? 1_000 : requireTimerMs('pollIntervalMs', options.pollIntervalMs);
  const migrate = options.migrate === undefined ? true : asOption(() => requireBoolean('migrate', options.migrate));
  if (options.listen !== undefined) asOption(() => requireBoolean('listen', options.listen));
  const pooler = poolerOption(options.pooler);
  const listenUrl = listenUrlOption(options.listenUrl, options.listen);
  const localHandoff = options.localHandoff === undefined ? true : asOption(() => requireBoolean('localHandoff', options.localHandoff));
  const maxPayloadBytes = maxPayloadBytesOption(options.maxPayloadBytes);
  const enqueueHeaders = options.enqueueHeaders === undefined ? null : asOption(() => requireFunction<EnqueueHeadersHook>('enqueueHeaders', options.enqueueHeaders));
  const claimDurability = options.claimDurability ?? 'deferred';
  if (claimDurability !== 'deferred' && claimDurability !== 'immediate') {
    throw new InvalidOption('claimDurability', 'must be "deferred" or "immediate"');
  }
  const random = options.random === undefined ? Math.random : asOption(() => requireFunction<() => number>('random', options.random));
  const logger = scrubbingLogger(options.logger ?? defaultLogger, secrets);

  if (options.pool !== undefined && !isPool(options.pool)) throw new InvalidOption('pool', 'must be a pg.Pool (an object with connect, query and end)');
  const pg = (await loadPeer('pg', () => import('pg'))).default;
  const ownsPool = options.pool === undefined;
  const pool: Pool = isPool(options.pool) ? options.pool : new pg.Pool({ connectionString: options.connectionString, max: poolSize });
  if (ownsPool) pool.on('error', (err) => logger.warn(`alkstore postgres: an idle pool connection failed: ${err.message}`));
  // A pool of one is left alone: a held connection would make every transaction wait for it.
  const store = new PostgresStore({
    pool, ownsPool, schema, pollIntervalMs, logger, random, claimDeferred: claimDurability === 'deferred', localHandoff, maxPayloadBytes, enqueueHeaders,
    holdConnection: ownsPool && poolSize >= 2, prepared: pooler !== 'transaction',
  });
  // LISTEN goes past a transaction-mode pooler (listenUrl) or nowhere: through it, notifications never arrive.
  const listenTarget = options.listen === false ? null : listenUrl !== undefined ? 'listenUrl' : pooler === 'transaction' ? null : hasUrl ? 'connectionString' : 'pool';
  let listener: PostgresListener | null = null;
  if (listenTarget !== null) {
    const base: ClientConfig = listenUrl !== undefined ? { connectionString: listenUrl } : hasUrl ? { connectionString: options.connectionString } : { ...(pool as unknown as { options: ClientConfig }).options };
    const config: ClientConfig = { ...base, application_name: `alkstore-listener:${schema}`.slice(0, 63), keepAlive: true, connectionTimeoutMillis: base.connectionTimeoutMillis ?? 10_000 };
    listener = new PostgresListener(() => new pg.Client(config), engineChannel(schema), {
      onPayload: (payload) => store.dispatch(payload),
      onReconnected: () => store.reconnected(),
      onHealthChange: (healthy) => store.listenerHealth(healthy),
    }, logger);
  }
  const wakesFrom =
    listenTarget === 'listenUrl' ? `${describeUrl(listenUrl ?? '')} (listenUrl)`
    : listenTarget !== null ? 'the store\'s own connection'
    : pooler === 'transaction' && options.listen !== false ? 'behind a transaction-mode pooler with no listenUrl'
    : 'LISTEN disabled';
  try {
    // Before any write: a LISTEN target that could never deliver is refused here, not polled around.
    await store.attachListener(listener, wakesFrom, listenTarget === null ? undefined : (client) =>
      verifyListenConnection(client, engineChannel(schema), (channel, payload) => pool.query('SELECT pg_notify($1, $2)', [channel, payload]), listenTarget));
    if (migrate) await applyMigrations(pool, schema, logger);
    else await verifySchema(pool, schema);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}

function isPool(v: unknown): v is Pool {
  const p = v as { connect?: unknown; query?: unknown; end?: unknown } | null;
  return typeof p === 'object' && p !== null && typeof p.connect === 'function' && typeof p.query === 'function' && typeof p.end === 'function';
}
