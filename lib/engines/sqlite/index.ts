import type { Store, StoreLogger } from '../../contract/types.js';

/** Options of {@link openSqliteStore}. */
export interface SqliteStoreOptions {
  /** A file path, or `:memory:` (one process, one connection's worth of mechanisms). */
  path: string;
  /** How often the watcher checks `PRAGMA data_version` for commits by other connections (ms, default 1). */
  pollIntervalMs?: number;
  logger?: StoreLogger;
}

/** Opens a store on an embedded SQLite file (WAL mode). */
export async function openSqliteStore(_options: SqliteStoreOptions): Promise<Store> {
  throw new Error('not implemented yet');
}
