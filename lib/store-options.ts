import type { EnqueueHeadersHook } from './contract/job-extras.js';
import type { StoreLogger } from './contract/types.js';
import type { PoolerMode } from './engines/postgres/pooler.js';

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
  /**
   * PostgreSQL: `'transaction'` when `url` goes through a transaction-mode pooler (PgBouncer,
   * Supavisor, RDS Proxy): statements run unnamed, and wakes come from `listenUrl` or polling
   * (docs/postgres.md, "Behind a connection pooler"). Default `'none'`.
   */
  pooler?: PoolerMode;
  /** PostgreSQL: a direct connection URL (past the pooler) for the one LISTEN connection. */
  listenUrl?: string;
  /** Poll interval (ms) of the fallback when wakes cannot be received. */
  pollIntervalMs?: number;
  /**
   * Random source in [0, 1) of the retry backoff jitter (SPEC §5), on either
   * engine. Default `Math.random`; tests inject one to pin delays.
   */
  random?: () => number;
  /**
   * Local hand-off (default true; both engines): a plain `queue.enqueue` (no ordering or unique
   * key, due now, not in a transaction) while a worker of this store is idle on that queue, which
   * is neither paused nor rate-limited, inserts the job already claimed by that worker and starts it
   * without a claim round trip. `false`: every job is enqueued pending and claimed
   * (docs/semantics.md, Queues, Local hand-off).
   */
  localHandoff?: boolean;
  /**
   * Largest queue, outbox, stream or schedule payload, in UTF-8 bytes of its JSON text
   * (default 1 048 576, 1 MiB; at most 2^30). A larger payload is `PayloadTooLarge` at the
   * call, before any write. Same option on both engines.
   */
  maxPayloadBytes?: number;
  /**
   * Enqueues of this store carry the active span's W3C trace context (`traceparent`) when
   * `@opentelemetry/api` is installed (default true). `false`: they do not. Other stores of the
   * process are not affected either way.
   */
  tracing?: boolean;
  /**
   * Adds headers to every enqueue of this store instead of the trace context (see
   * `EnqueueHeadersHook`); wins over `tracing`. Compose `withTraceContext` from `alkstore/tracing`
   * into it to keep both.
   */
  enqueueHeaders?: EnqueueHeadersHook;
  logger?: StoreLogger;
}
