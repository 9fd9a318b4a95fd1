import { traceContextHook } from '../tracing/trace-headers.js';
import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import { InvalidOption } from '../contract/errors.js';
import type { Store, StoreLogger } from '../contract/types.js';
import { openStore, refusePostgresOnly } from '../open-store.js';
import type { AlkstoreModuleOptions } from './interfaces/alkstore-options.interface.js';
import { validateModuleOptions } from './utils/validate-module-options.js';

const SQLITE_TYPES = new Set(['better-sqlite3', 'sqlite']);
const POSTGRES_TYPES = new Set(['postgres']);

/** Opens the store the module options describe: from `url`, or next to a TypeORM `DataSource`. */
export async function openStoreFromOptions(options: AlkstoreModuleOptions, logger: StoreLogger): Promise<Store> {
  validateModuleOptions(options);
  // Optional: when @opentelemetry/api is installed, this store's enqueues carry the active trace context.
  const enqueueHeaders = await traceContextHook(options.tracing);
  const common = {
    schema: options.schema,
    migrate: options.migrate,
    poolSize: options.poolSize,
    pooler: options.pooler,
    listenUrl: options.listenUrl,
    wakeFallbackMs: options.pollIntervalMs,
    localHandoff: options.localHandoff,
    workerLiveness: options.workerLiveness,
    maxPayloadBytes: options.maxPayloadBytes,
    messageIdPrefix: options.messageIdPrefix,
    tracing: false,
    enqueueHeaders,
    logger,
  };
  if (options.url !== undefined && options.dataSource !== undefined) {
    throw new InvalidOption('url', 'and dataSource are exclusive: give one');
  }
  if (options.url !== undefined) return openStore({ ...common, url: options.url });
  if (options.dataSource !== undefined) return openNextToDataSource(options.dataSource, options, common);
  throw new InvalidOption(
    'url',
    'is missing: AlkstoreModule needs `url` (sqlite:… / postgres://…) or a TypeORM `dataSource`',
  );
}

async function openNextToDataSource(
  ds: DataSource,
  options: AlkstoreModuleOptions,
  common: Omit<Parameters<typeof openStore>[0], 'url'>,
): Promise<Store> {
  const type = String(ds.options.type);
  if (SQLITE_TYPES.has(type)) {
    const database = (ds.options as { database?: unknown }).database;
    if (typeof database !== 'string' || database.length === 0) {
      throw new InvalidOption('dataSource', `of type ${type} names no database file (options.database)`);
    }
    if (database === ':memory:' || database.startsWith('file::memory:')) {
      throw new InvalidOption(
        'dataSource',
        `of type ${type} uses an in-memory database (":memory:"); alkstore opens its own connection, which ` +
          `would see a different, empty database. Use a file path`,
      );
    }
    refusePostgresOnly(common, 'dataSource');
    const { openSqliteStore } = await import('../engines/sqlite/index.js');
    return openSqliteStore({
      path: database,
      wakeFallbackMs: common.wakeFallbackMs,
      localHandoff: common.localHandoff,
      workerLiveness: common.workerLiveness,
      maxPayloadBytes: common.maxPayloadBytes,
      enqueueHeaders: common.enqueueHeaders,
      logger: common.logger,
    });
  }
  if (POSTGRES_TYPES.has(type)) {
    const { openPostgresStore } = await import('../engines/postgres/index.js');
    if (options.reusePool) {
      const pool = (ds.driver as unknown as { master?: Pool }).master;
      if (!ds.isInitialized || pool === undefined) {
        throw new InvalidOption(
          'reusePool',
          'needs an initialized DataSource (call dataSource.initialize() first, or inject it from a provider that does)',
        );
      }
      return openPostgresStore({ ...common, pool });
    }
    return openPostgresStore({ ...common, connectionString: postgresUrlOf(ds) });
  }
  throw new InvalidOption(
    'dataSource',
    `has type ${JSON.stringify(type)}; alkstore supports better-sqlite3, sqlite and postgres`,
  );
}

/** A connection string from a TypeORM postgres DataSource's options. Never logged: it may hold a password. */
export function postgresUrlOf(ds: DataSource): string {
  const o = ds.options as {
    url?: string;
    host?: string;
    port?: number;
    username?: string;
    password?: unknown;
    database?: string;
    ssl?: unknown;
  };
  if (typeof o.url === 'string' && o.url.length > 0) return o.url;
  if (o.password !== undefined && typeof o.password !== 'string') {
    throw new InvalidOption(
      'dataSource',
      'has a non-string password (a function?); pass `url` to AlkstoreModule, or set `reusePool: true`',
    );
  }
  const url = new URL('postgres://localhost');
  url.hostname = o.host ?? 'localhost';
  if (o.port !== undefined) url.port = String(o.port);
  if (o.username) url.username = encodeURIComponent(o.username);
  if (typeof o.password === 'string' && o.password.length > 0) url.password = encodeURIComponent(o.password);
  url.pathname = `/${encodeURIComponent(o.database ?? '')}`;
  if (o.ssl) url.searchParams.set('sslmode', 'require');
  return url.toString();
}
