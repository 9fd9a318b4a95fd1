import type { StoreLogger } from './contract/types.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /**
   * `sqlite:<path>`, `sqlite::memory:`, a plain file path (no scheme), or
   * `postgres://…` / `postgresql://…`. Any other scheme is `InvalidOption`
   * naming the scheme only; the password never appears in an error or a log.
   */
  url: string;
  /** PostgreSQL: the engine-owned schema (default `alkstore`). */
  schema?: string;
  /** PostgreSQL: apply migrations at open (default true). */
  migrate?: boolean;
  /** PostgreSQL: pool size (default 10). */
  poolSize?: number;
  /** Poll interval (ms) of the fallback when wakes cannot be received. */
  pollIntervalMs?: number;
  /**
   * Random source in [0, 1) of the retry backoff jitter (SPEC §5), on either
   * engine. Default `Math.random`; tests inject one to pin delays.
   */
  random?: () => number;
  logger?: StoreLogger;
}
