import type { PostgresStoreOptions } from './engines/postgres/index.js';
import type { CommonStoreOptions } from './engines/shared/options.js';

export type { CommonStoreOptions } from './engines/shared/options.js';

/**
 * Options of {@link openStore}: the {@link CommonStoreOptions} of every engine, and the
 * PostgreSQL options a URL store can take (declared once, on `PostgresStoreOptions`). A
 * PostgreSQL-only connection option (`pooler`, `listenUrl`) given for a SQLite URL is
 * `InvalidOption`; `schema`, `migrate` and `poolSize` are ignored by SQLite.
 */
export interface OpenStoreOptions
  extends CommonStoreOptions, Pick<PostgresStoreOptions, 'schema' | 'migrate' | 'poolSize' | 'pooler' | 'listenUrl'> {
  /**
   * `sqlite:<path>`, `sqlite::memory:`, a plain file path (no scheme), or
   * `postgres://…` / `postgresql://…`. Any other scheme is `InvalidOption`
   * naming the scheme only; the password never appears in an error or a log.
   */
  url: string;
  /**
   * Enqueues of this store carry the active span's W3C trace context (`traceparent`) when
   * `@opentelemetry/api` is installed (default true). `false`: they do not. Other stores of the
   * process are not affected either way. An `enqueueHeaders` hook wins over it.
   */
  tracing?: boolean;
}
