import { InvalidOption } from './contract/errors.js';
import type { Store } from './contract/types.js';
import type { OpenStoreOptions } from './store-options.js';
import { loadOtelApi } from './tracing/otel-api.js';

/** Which engine a URL names. */
export function engineOfUrl(url: string): 'sqlite' | 'postgres' {
  if (typeof url !== 'string' || url.length === 0) throw new InvalidOption('url', 'must be a non-empty string');
  if (/^postgres(ql)?:\/\//i.test(url)) return 'postgres';
  return 'sqlite';
}

/** The SQLite path of a `sqlite:` URL (or a bare path). */
export function sqlitePathOfUrl(url: string): string {
  const path = url.startsWith('sqlite://') ? url.slice('sqlite://'.length) : url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : url;
  if (path.length === 0) throw new InvalidOption('url', 'names no SQLite file (use sqlite:./data/app.db or sqlite::memory:)');
  return path;
}

/**
 * Opens a store on the engine the URL names. A missing driver package is an
 * error naming the package to install.
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  if (options === null || typeof options !== 'object') throw new InvalidOption('options', 'must be an object with a url');
  // Optional: when @opentelemetry/api is installed, enqueues carry the active trace context from now on.
  await loadOtelApi();
  if (engineOfUrl(options.url) === 'postgres') {
    const { openPostgresStore } = await import('./engines/postgres/index.js');
    return openPostgresStore({ ...options, connectionString: options.url });
  }
  const { openSqliteStore } = await import('./engines/sqlite/index.js');
  return openSqliteStore({ ...options, path: sqlitePathOfUrl(options.url) });
}
