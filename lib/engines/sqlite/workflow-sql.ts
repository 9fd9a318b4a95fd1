import { positional, type WorkflowSql } from '../../workflows/sql-seam.js';
import type { SqliteConn } from './connection.js';

/** Runs a statement (`?` placeholders) on a connection: its rows, or none for a statement that returns nothing. */
export function runOn(conn: SqliteConn, sql: string, params: readonly unknown[]): Record<string, unknown>[] {
  const st = conn.stmt(sql);
  if (/^\s*(SELECT|WITH|EXPLAIN)\b/i.test(sql) || /\bRETURNING\b/i.test(sql))
    return st.all(...params) as Record<string, unknown>[];
  st.run(...params);
  return [];
}

/** The workflows' statements through `run` (a store's read or write path, a transaction's savepoint, a caller's runner). */
export function sqliteWorkflowSql(
  run: (sql: string, params: unknown[], write: boolean) => Promise<Record<string, unknown>[]>,
): WorkflowSql {
  return {
    dialect: 'sqlite',
    prefix: '__alkstore_',
    query: (sql, params, write) => {
      const p = positional(sql, params);
      return run(p.sql, p.params, write);
    },
  };
}
