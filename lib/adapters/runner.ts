import type { QueryRunnerLike } from '../contract/types.js';

/** What an adapter's statement returns: the rows, and how many rows it changed. */
export interface AdapterResult {
  readonly records: Record<string, unknown>[];
  readonly affected: number;
}

/** The better-sqlite3 connection under an ORM, when reachable: a revoked SQLite transaction is rolled back on it at once. */
export interface SyncSqliteConnection {
  exec(sql: string): unknown;
  readonly inTransaction: boolean;
}

/**
 * A QueryRunnerLike over one ORM transaction. It is active while `active()`
 * says so: from the moment the ORM hands over its transaction until the
 * caller's function settles (after that the ORM commits or rolls back, and
 * any later alkstore write through it is refused). `sqlite` is the
 * better-sqlite3 connection under it when reachable; `source` the ORM client
 * every transaction of the `open` runs on (a SQLite store checks the file of
 * a source once, not per transaction).
 */
export function adapterRunner(
  run: (sql: string, params: unknown[]) => Promise<AdapterResult>,
  active: () => boolean,
  sqlite?: SyncSqliteConnection | null,
  source?: object,
): QueryRunnerLike {
  return {
    get isTransactionActive(): boolean {
      return active();
    },
    query: (sql: string, parameters?: unknown[]) => run(sql, parameters ?? []),
    ...(sqlite ? { driver: { databaseConnection: sqlite } } : {}),
    ...(source ? { source } : {}),
  };
}

/**
 * Opens `body` once the ORM handed over its transaction and marks the runner
 * inactive when the caller's function settles.
 */
export async function whileActive<T>(fn: (isActive: () => boolean) => Promise<T>): Promise<T> {
  let active = true;
  try {
    return await fn(() => active);
  } finally {
    active = false;
  }
}
