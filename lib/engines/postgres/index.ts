/**
 * The PostgreSQL engine: `openPostgresStore(options)` and the engine's
 * migrations for teams that apply them with their own tooling.
 */
import type { ClientConfig, Pool } from 'pg';
import { InvalidOption } from '../../contract/errors.js';
import type { Store, StoreLogger } from '../../contract/types.js';
import { asOption, requireBoolean, requireCount } from '../../contract/validate.js';
import { resolveCommonOptions } from '../shared/options.js';
import type { PostgresStoreOptions } from './options.js';
import { loadPeer } from '../../internal/load-peer.js';
import { scrubbingLogger, scrubSecrets, secretForms, urlSecrets } from '../../internal/secrets.js';
import { applyMigrations, readStoreIdentity, verifySchema } from './migrations.js';
import { firstConnection } from './first-connection.js';
import { PostgresListener } from './notify/listener.js';
import { PostgresStore } from './store.js';
import { describeUrl, listenUrlOption, poolerOption, verifyListenConnection } from './pooler.js';
import { engineChannel, validateSchemaName } from './schema-sql.js';

export {
  POSTGRES_MIGRATIONS,
  POSTGRES_SCHEMA_VERSION,
  postgresMigrationSql,
  type PostgresMigration,
} from './migrations.js';
export { PG_NOTIFY_LIMIT } from './schema-sql.js';
export type { CommonStoreOptions } from '../shared/options.js';
export type { PostgresStoreOptions } from './options.js';
export type { PoolerMode } from './pooler.js';

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
  return [
    ...new Set([
      ...urlSecrets(options.connectionString),
      ...urlSecrets(options.listenUrl),
      ...secretForms(poolPassword),
      ...urlSecrets(
        (options.pool as { options?: { connectionString?: unknown } } | undefined)?.options?.connectionString,
      ),
    ]),
  ];
}

async function open(options: PostgresStoreOptions, secrets: readonly string[]): Promise<Store> {
  const schema = validateSchemaName(options.schema ?? 'alkstore');
  const hasUrl = options.connectionString !== undefined;
  if (hasUrl === (options.pool !== undefined))
    throw new InvalidOption('connectionString', 'or pool is required (exactly one of them)');
  if (hasUrl && (typeof options.connectionString !== 'string' || options.connectionString.length === 0)) {
    throw new InvalidOption('connectionString', 'must be a non-empty string');
  }
  const poolSize = options.poolSize === undefined ? 10 : requireCount('poolSize', options.poolSize, 10_000);
  const migrate = options.migrate === undefined ? true : asOption(() => requireBoolean('migrate', options.migrate));
  if (options.listen !== undefined) asOption(() => requireBoolean('listen', options.listen));
  const pooler = poolerOption(options.pooler);
  const listenUrl = listenUrlOption(options.listenUrl, options.listen);
  const crossProcessHandoff =
    options.crossProcessHandoff === undefined
      ? false
      : asOption(() => requireBoolean('crossProcessHandoff', options.crossProcessHandoff));
  const {
    wakeFallbackMs,
    claimDurability,
    localHandoff,
    maxPayloadBytes,
    enqueueHeaders,
    random,
    logger,
    messageIdPrefix,
    workerLiveness,
  } = resolveCommonOptions(
    { ...options, logger: scrubbingLogger(options.logger ?? defaultLogger, secrets) },
    { wakeFallbackMs: 1_000, logger: defaultLogger },
  );

  if (options.pool !== undefined && !isPool(options.pool))
    throw new InvalidOption('pool', 'must be a pg.Pool (an object with connect, query and end)');
  const pg = (await loadPeer('pg', () => import('pg'))).default;
  const ownsPool = options.pool === undefined;
  const pool: Pool = isPool(options.pool)
    ? options.pool
    : new pg.Pool({ connectionString: options.connectionString, max: poolSize });
  if (ownsPool)
    pool.on('error', (err) => logger.warn(`alkstore postgres: an idle pool connection failed: ${err.message}`));
  // A pool of one is left alone: a held connection would make every transaction wait for it.
  const store = new PostgresStore({
    pool,
    ownsPool,
    schema,
    wakeFallbackMs,
    logger,
    random,
    claimDeferred: claimDurability === 'deferred',
    localHandoff,
    maxPayloadBytes,
    enqueueHeaders,
    holdConnection: ownsPool && poolSize >= 2,
    prepared: pooler !== 'transaction',
    messageIdPrefix,
    workerLiveness,
    crossProcessHandoff,
  });
  // LISTEN goes past a transaction-mode pooler (listenUrl) or nowhere: through it, notifications never arrive.
  const listenTarget =
    options.listen === false
      ? null
      : listenUrl !== undefined
        ? 'listenUrl'
        : pooler === 'transaction'
          ? null
          : hasUrl
            ? 'connectionString'
            : 'pool';
  let listener: PostgresListener | null = null;
  if (listenTarget !== null) {
    const base: ClientConfig =
      listenUrl !== undefined
        ? { connectionString: listenUrl }
        : hasUrl
          ? { connectionString: options.connectionString }
          : { ...(pool as unknown as { options: ClientConfig }).options };
    const config: ClientConfig = {
      ...base,
      application_name: `alkstore-listener:${schema}`.slice(0, 63),
      keepAlive: true,
      connectionTimeoutMillis: base.connectionTimeoutMillis ?? 10_000,
    };
    listener = new PostgresListener(
      () => new pg.Client(config),
      engineChannel(schema),
      {
        onPayload: (payload) => store.dispatch(payload),
        onReconnected: () => store.reconnected(),
        onHealthChange: (healthy) => store.listenerHealth(healthy),
      },
      logger,
    );
  }
  const wakesFrom =
    listenTarget === 'listenUrl'
      ? `${describeUrl(listenUrl ?? '')} (listenUrl)`
      : listenTarget !== null
        ? "the store's own connection"
        : pooler === 'transaction' && options.listen !== false
          ? 'behind a transaction-mode pooler with no listenUrl'
          : 'LISTEN disabled';
  try {
    // The database is reachable and exists before the LISTEN connection starts (which would only warn).
    await firstConnection(
      pool,
      hasUrl ? { connectionString: options.connectionString } : (pool as unknown as { options?: ClientConfig }).options,
    );
    // Before any write: a LISTEN target that could never deliver is refused here, not polled around.
    await store.attachListener(
      listener,
      wakesFrom,
      listenTarget === null
        ? undefined
        : (client) =>
            verifyListenConnection(
              client,
              engineChannel(schema),
              (channel, payload) => pool.query('SELECT pg_notify($1, $2)', [channel, payload]),
              listenTarget,
            ),
    );
    if (migrate) await applyMigrations(pool, schema, logger);
    else await verifySchema(pool, schema);
    store.setIdentity(await readStoreIdentity(pool, schema));
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }
  return store;
}

function isPool(v: unknown): v is Pool {
  const p = v as { connect?: unknown; query?: unknown; end?: unknown } | null;
  return (
    typeof p === 'object' &&
    p !== null &&
    typeof p.connect === 'function' &&
    typeof p.query === 'function' &&
    typeof p.end === 'function'
  );
}
