import type { Pool } from 'pg';
import type { CommonStoreOptions } from '../shared/options.js';
import type { PoolerMode } from './pooler.js';

/** Options of `openPostgresStore`: the {@link CommonStoreOptions} of every engine, and PostgreSQL's own. */
export interface PostgresStoreOptions extends CommonStoreOptions {
  /** `postgres://user@host:5432/db`. Either this or `pool`. */
  connectionString?: string;
  /**
   * A `pg.Pool` the caller owns: `close()` never ends it. The store's LISTEN
   * connection is a separate client built from the pool's connection options.
   */
  pool?: Pool | unknown;
  /** The engine-owned schema (default `alkstore`). A plain identifier; always quoted in SQL (case is kept). */
  schema?: string;
  /**
   * Apply migrations at open (default true), under a transaction-scoped
   * advisory lock so concurrent boots migrate once. `false`: only check the
   * schema is at the expected version (apply `postgresMigrationSql()` yourself).
   */
  migrate?: boolean;
  /** Pool size when the store creates its pool (default 10). */
  poolSize?: number;
  /**
   * Open a LISTEN connection (default true). `false`: every receiver is
   * woken by polling every `wakeFallbackMs` instead of on commit.
   */
  listen?: boolean;
  /**
   * What sits between `connectionString` (or `pool`) and PostgreSQL
   * (docs/postgres.md, "Behind a connection pooler"). `'none'` (default) or
   * `'session'` (a session-mode pooler): nothing changes. `'transaction'`
   * (PgBouncer `pool_mode = transaction`, Supavisor on 6543, RDS Proxy):
   * statements run unnamed (no prepared statements left on server
   * connections), and wakes come from LISTEN on `listenUrl` when given, else
   * from polling every `wakeFallbackMs`. A store never relies on other
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
   * Cross-process hand-off (default false: opt in; needs `localHandoff`; docs/semantics.md, Queues,
   * "Cross-process hand-off"). With `true`, a worker idle on a queue offers one handler slot to the plain
   * enqueues of every store of the schema, in any process, as a row its LISTEN session vouches for
   * with an advisory lock; such an enqueue (no ordering, unique or limit key, due now, not in a
   * transaction, on a queue neither paused nor limited, with no ready job or lapsed claim waiting)
   * inserts the job already claimed by that worker and notifies it, so no claim statement runs. Every
   * plain single enqueue on a queue with offers announced looks for one (one index probe). `false`: this
   * store neither offers its workers nor looks for offers; its enqueues insert pending jobs that workers
   * claim.
   */
  crossProcessHandoff?: boolean;
}
