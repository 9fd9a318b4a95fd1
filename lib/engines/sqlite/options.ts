import { InvalidOption } from '../../contract/errors.js';
import type { StoreLogger } from '../../contract/types.js';
import { asOption, requireBoolean, requireTimerMs } from '../../contract/validate.js';
import { resolveCommonOptions, type CommonStoreOptions, type ResolvedCommonOptions } from '../shared/options.js';
import { validateDriverOption, type SqliteDriverName } from './binding.js';

/** Options of `openSqliteStore`: the {@link CommonStoreOptions} of every engine, and SQLite's own. */
export interface SqliteStoreOptions extends CommonStoreOptions {
  /** A file path, or `:memory:` (one store in one process; wakes are in-process only). */
  path: string;
  /**
   * `'full'` (default): every acknowledged write is fsynced to the WAL before the call resolves.
   * `'normal'`: faster; a power loss (not a process crash) may lose the last commits.
   */
  synchronous?: 'full' | 'normal';
  /**
   * Longest time (ms) a write waits, asynchronously, for the database write lock held by
   * another connection (another process, or an open TypeORM transaction) before it fails
   * with a `Database` error. Default 30 000.
   */
  lockWaitTimeoutMs?: number;
  /**
   * Cross-process turn-taking on the write lock (default true): a write that finds the lock
   * taken leaves a ticket in `<path>-alkwait/`, and the writers of other alkstore stores step
   * aside before their next transaction until it has had its turn, so one process writing flat
   * out cannot starve another (docs/sqlite.md, Several processes). `false`: plain polling.
   */
  writeFairness?: boolean;
  /**
   * Which SQLite driver opens the file. `'auto'` (default): better-sqlite3 when it is installed,
   * else Node's built-in `node:sqlite` (Node 22.13+; no native addon to build). `'better-sqlite3'`
   * or `'node:sqlite'` to choose; the file, the tables and every behaviour are the same.
   */
  driver?: 'auto' | SqliteDriverName;
}

/** Options with defaults filled in. */
export interface ResolvedSqliteOptions extends ResolvedCommonOptions {
  path: string;
  memory: boolean;
  synchronous: 'full' | 'normal';
  lockWaitTimeoutMs: number;
  writeFairness: boolean;
  driver: 'auto' | SqliteDriverName;
}

const defaultLogger: StoreLogger = {
  log: () => undefined,
  warn: (m) => console.warn(`[alkstore] ${m}`),
  error: (m, e) => console.error(`[alkstore] ${m}`, e ?? ''),
};

function timerOption(field: string, v: unknown, dflt: number): number {
  return v === undefined ? dflt : requireTimerMs(field, v);
}

/** Validates `SqliteStoreOptions` and fills defaults. */
export function resolveSqliteOptions(o: SqliteStoreOptions): ResolvedSqliteOptions {
  if (o === null || typeof o !== 'object') throw new InvalidOption('sqlite options', 'must be an object with a path');
  if (typeof o.path !== 'string' || o.path.length === 0)
    throw new InvalidOption('path', 'must be a non-empty string (a file path or ":memory:")');
  const synchronous = o.synchronous ?? 'full';
  if (synchronous !== 'full' && synchronous !== 'normal')
    throw new InvalidOption('synchronous', `must be "full" or "normal", got ${JSON.stringify(synchronous)}`);
  return {
    ...resolveCommonOptions(o, { wakeFallbackMs: 1, logger: defaultLogger }),
    path: o.path,
    memory: o.path === ':memory:',
    synchronous,
    lockWaitTimeoutMs: timerOption('lockWaitTimeoutMs', o.lockWaitTimeoutMs, 30_000),
    writeFairness:
      o.writeFairness === undefined ? true : asOption(() => requireBoolean('writeFairness', o.writeFairness)),
    driver: validateDriverOption(o.driver),
  };
}
