import { InvalidOption } from './contract/errors.js';
import type { Store } from './contract/types.js';
import { scrubSecrets, urlSecrets } from './internal/secrets.js';
import type { OpenStoreOptions } from './store-options.js';
import { requireBoolean, requireFunction, asOption } from './contract/validate.js';
import { traceContextHook } from './tracing/trace-headers.js';

const ACCEPTED = 'accepted: sqlite:<path>, sqlite::memory:, a plain file path, postgres://… or postgresql://…';

/**
 * Which engine a URL names. Accepted forms: `sqlite:<path>`,
 * `sqlite::memory:`, a plain file path (no scheme), `postgres://…` and
 * `postgresql://…` (scheme case-insensitive). Anything else, and a `sqlite://` URL
 * with a user, password or host, is {@link InvalidOption} naming the scheme, never the rest of the URL.
 */
export function engineOfUrl(url: string): 'sqlite' | 'postgres' {
  if (typeof url !== 'string' || url.trim().length === 0) throw new InvalidOption('url', 'must be a non-empty string');
  const scheme = schemeOf(url);
  if (scheme === null) return 'sqlite';
  const lower = scheme.toLowerCase();
  if (lower === 'sqlite') {
    refuseSqliteAuthority(url.slice(scheme.length + 1), scheme);
    return 'sqlite';
  }
  if (lower === 'postgres' || lower === 'postgresql') {
    if (!url.slice(scheme.length + 1).startsWith('//')) {
      throw new InvalidOption('url', `has the scheme "${scheme}:" without "//"; write ${lower}://user@host:5432/db`);
    }
    if (!URL.canParse(url)) {
      throw new InvalidOption(
        'url',
        `is not a valid ${lower}:// URL (check the host, the port, and that the user and password are percent-encoded)`,
      );
    }
    return 'postgres';
  }
  throw new InvalidOption(
    'url',
    `has the unsupported scheme "${scheme.length > 32 ? `${scheme.slice(0, 32)}…` : scheme}:"; ${ACCEPTED}`,
  );
}

/**
 * A `sqlite://` URL whose authority (the text between `//` and the next `/`) holds a user, a
 * password or a host is refused: SQLite opens a local file, and such a URL would otherwise name a
 * directory called after them. An empty authority (`sqlite:///abs/path.db`), a relative start
 * (`.` or `..`), a drive letter (`C:`) and `:memory:` are paths. The message names neither.
 */
function refuseSqliteAuthority(afterScheme: string, scheme: string): void {
  if (!afterScheme.startsWith('//')) return;
  const authority = /^[^/\\?#]*/.exec(afterScheme.slice(2))![0];
  const fix = `SQLite opens a local file: write ${scheme}:<path> (e.g. ${scheme}:./data/app.db) or ${scheme}:///<absolute path>`;
  if (authority.includes('@')) throw new InvalidOption('url', `has a user or password after "${scheme}://"; ${fix}`);
  if (authority === '' || authority === '.' || authority === '..' || authority === ':memory:') return;
  if (/^[A-Za-z]:$/.test(authority)) return;
  throw new InvalidOption('url', `names a host after "${scheme}://"; ${fix}`);
}

/**
 * The scheme of a URL, or null for a plain path. A single letter before the
 * colon is a Windows drive (`C:\data\app.db`), not a scheme.
 */
function schemeOf(url: string): string | null {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url);
  if (!m || m[1].length === 1) return null;
  return m[1];
}

/** The SQLite path of a `sqlite:` URL (or a bare path). */
export function sqlitePathOfUrl(url: string): string {
  const lower = url.toLowerCase();
  const path = lower.startsWith('sqlite://')
    ? url.slice('sqlite://'.length)
    : lower.startsWith('sqlite:')
      ? url.slice('sqlite:'.length)
      : url;
  if (path.length === 0)
    throw new InvalidOption('url', 'names no SQLite file (use sqlite:./data/app.db or sqlite::memory:)');
  return path;
}

/** `pooler` and `listenUrl` name PostgreSQL connections: given with a SQLite store they are a mistake, not a no-op. */
export function refusePostgresOnly(
  options: { pooler?: unknown; listenUrl?: unknown },
  store: 'url' | 'dataSource',
): void {
  for (const key of ['pooler', 'listenUrl'] as const) {
    if (options[key] !== undefined)
      throw new InvalidOption(key, `is a PostgreSQL option, but this ${store} opens SQLite: remove it`);
  }
}

/**
 * Opens a store on the engine the URL names. A missing driver package is an
 * error naming the package to install. No error carries the URL's password.
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  if (options === null || typeof options !== 'object')
    throw new InvalidOption('options', 'must be an object with a url');
  const engine = engineOfUrl(options.url);
  const { tracing, ...rest } = options;
  if (tracing !== undefined) asOption(() => requireBoolean('tracing', tracing));
  if (rest.enqueueHeaders !== undefined) asOption(() => requireFunction('enqueueHeaders', rest.enqueueHeaders));
  // This store's enqueues carry the active trace context when @opentelemetry/api is installed; other stores are not touched.
  const enqueueHeaders = rest.enqueueHeaders ?? (await traceContextHook(tracing));
  const engineOptions = enqueueHeaders === undefined ? rest : { ...rest, enqueueHeaders };
  try {
    if (engine === 'postgres') {
      const { openPostgresStore } = await import('./engines/postgres/index.js');
      return await openPostgresStore({ ...engineOptions, connectionString: options.url });
    }
    refusePostgresOnly(options, 'url');
    const { openSqliteStore } = await import('./engines/sqlite/index.js');
    return await openSqliteStore({ ...engineOptions, path: sqlitePathOfUrl(options.url) });
  } catch (err) {
    throw scrubSecrets(err, urlSecrets(options.url));
  }
}
