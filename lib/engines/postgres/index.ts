import type { Store, StoreLogger } from '../../contract/types.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user@host:5432/db`. Either this or `pool`. */
  connectionString?: string;
  /** A `pg.Pool` the caller owns (never ended by the store). */
  pool?: unknown;
  /** Engine-owned schema, default `alkstore`. */
  schema?: string;
  /** Apply migrations at open (default true). */
  migrate?: boolean;
  /** Pool size when the store creates its pool (default 10). */
  poolSize?: number;
  /** Poll fallback interval when LISTEN is unavailable (ms, default 1000). */
  pollIntervalMs?: number;
  logger?: StoreLogger;
}

/** Opens a store on PostgreSQL. */
export async function openPostgresStore(_options: PostgresStoreOptions): Promise<Store> {
  throw new Error('not implemented yet');
}
