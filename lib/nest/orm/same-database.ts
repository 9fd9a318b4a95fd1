import { resolve } from 'node:path';
import type { DataSource } from 'typeorm';
import { engineOfUrl, sqlitePathOfUrl } from '../../open-store.js';

const SQLITE_TYPES = new Set(['better-sqlite3', 'sqlite']);

/**
 * Whether a TypeORM DataSource is on the database a store URL names: the same
 * SQLite file, or the same PostgreSQL host, port and database. Never throws
 * and never returns anything that could carry a password.
 */
export function sameDatabase(url: string, ds: DataSource): boolean {
  try {
    const type = String(ds.options.type);
    const o = ds.options as { database?: unknown; url?: unknown; host?: unknown; port?: unknown };
    if (engineOfUrl(url) === 'sqlite') {
      if (!SQLITE_TYPES.has(type) || typeof o.database !== 'string') return false;
      const path = sqlitePathOfUrl(url);
      if (path === ':memory:' || o.database === ':memory:') return false;
      return resolve(path) === resolve(o.database);
    }
    if (type !== 'postgres') return false;
    const store = new URL(url);
    const other = typeof o.url === 'string' ? new URL(o.url) : null;
    const host = other ? other.hostname : typeof o.host === 'string' ? o.host : 'localhost';
    const port = other ? other.port || '5432' : String(o.port ?? 5432);
    const database = other ? decodeURIComponent(other.pathname.slice(1)) : String(o.database ?? '');
    return (
      sameHost(store.hostname, host) &&
      (store.port || '5432') === port &&
      decodeURIComponent(store.pathname.slice(1)) === database
    );
  } catch {
    return false;
  }
}

function sameHost(a: string, b: string): boolean {
  const local = (h: string): string =>
    h === 'localhost' || h === '127.0.0.1' || h === '[::1]' || h === '::1' ? 'localhost' : h.toLowerCase();
  return local(a) === local(b);
}
