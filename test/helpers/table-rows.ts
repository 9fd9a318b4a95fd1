import { sqliteOpener } from '../../lib/engines/sqlite/connection.js';

// Not from ./engines.js, which needs jest: the soak bench (bench/soak.ts) reads tables through this module too.
const PG_URL = process.env.ALKSTORE_PG_URL ?? process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const sqliteDriver = (): 'better-sqlite3' | 'node:sqlite' | undefined => {
  const d = process.env.ALKSTORE_SQLITE_DRIVER;
  return d === 'better-sqlite3' || d === 'node:sqlite' ? d : undefined;
};

/**
 * Engine-level reads of the tables the migrations create, for the retention tests and the soak bench:
 * a fresh connection per call (a SQLite read-only handle, a PostgreSQL client), never a store's own.
 */

/** The tables' names without the engine's prefix: SQLite `__alkstore_<name>`, PostgreSQL `"<schema>".<name>`. */
export type Table =
  | 'jobs'
  | 'job_outcomes'
  | 'job_attempts'
  | 'job_waits'
  | 'job_deps'
  | 'key_rate_windows'
  | 'queue_settings'
  | 'queue_counts'
  | 'queue_minutes'
  | 'queue_latency'
  | 'stream_heads'
  | 'stream_events'
  | 'stream_offsets'
  | 'locks'
  | 'nodes'
  | 'workflow_runs'
  | 'workflow_counts'
  | 'workflow_steps'
  | 'schedules'
  | 'inbox'
  | 'outbox_receipts'
  | 'notify'
  | 'meta'
  | 'migrations';

/** Where a table lives on each engine (SQLite's stream tables carry older names). */
function tableName(kind: 'sqlite' | 'postgres', location: string, t: Table): string {
  if (kind === 'postgres') return `"${location}".${t}`;
  const renamed: Partial<Record<Table, string>> = { stream_events: 'events', stream_offsets: 'offsets' };
  return `__alkstore_${renamed[t] ?? t}`;
}

/** The engine's own table names for the SQL of {@link countRows}: `{jobs}` → the jobs table. */
function expand(kind: 'sqlite' | 'postgres', location: string, sql: string): string {
  let n = 0;
  const withTables = sql.replace(/\{(\w+)\}/g, (_, t: string) => tableName(kind, location, t as Table));
  return kind === 'postgres' ? withTables.replace(/\?/g, () => `$${++n}`) : withTables;
}

/** Runs one read on the engine's database: `sql` names tables as `{table}` and parameters as `?`. */
export async function queryRows<R>(
  kind: 'sqlite' | 'postgres',
  location: string,
  sql: string,
  params: readonly unknown[] = [],
): Promise<R[]> {
  const text = expand(kind, location, sql);
  if (kind === 'sqlite') {
    const { open } = await sqliteOpener(sqliteDriver());
    const db = open(location, { readonly: true });
    try {
      return db.prepare(text).all(...params) as R[];
    } finally {
      db.close();
    }
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return (await client.query(text, [...params])).rows as R[];
  } finally {
    await client.end();
  }
}

/** Runs one write on the engine's database (a test that back-dates rows it cannot wait for). */
export async function execRows(
  kind: 'sqlite' | 'postgres',
  location: string,
  sql: string,
  params: readonly unknown[] = [],
): Promise<number> {
  const text = expand(kind, location, sql);
  if (kind === 'sqlite') {
    const { open } = await sqliteOpener(sqliteDriver());
    const db = open(location, { readonly: false });
    try {
      db.exec('PRAGMA busy_timeout = 5000');
      return Number(db.prepare(text).run(...params).changes);
    } finally {
      db.close();
    }
  }
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    return (await client.query(text, [...params])).rowCount ?? 0;
  } finally {
    await client.end();
  }
}

/** How many rows of `table` match `where` (SQL with `?` parameters; default every row). */
export async function countRows(
  kind: 'sqlite' | 'postgres',
  location: string,
  table: Table,
  where = 'true',
  params: readonly unknown[] = [],
): Promise<number> {
  const rows = await queryRows<{ n: number | string }>(
    kind,
    location,
    `SELECT count(*) AS n FROM {${table}} WHERE ${where}`,
    params,
  );
  return Number(rows[0]!.n);
}

/** Every table the migrations created on this database, by name without prefix. */
export async function tableNames(kind: 'sqlite' | 'postgres', location: string): Promise<string[]> {
  const rows =
    kind === 'sqlite'
      ? await queryRows<{ name: string }>(
          kind,
          location,
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '\\_\\_alkstore\\_%' ESCAPE '\\' ORDER BY name",
        )
      : await queryRows<{ name: string }>(
          kind,
          location,
          'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name',
          [location],
        );
  return rows.map((r) => r.name.replace(/^__alkstore_/, ''));
}

/** Row counts of every table of {@link tableNames} (the soak bench's sample). */
export async function allTableRows(kind: 'sqlite' | 'postgres', location: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of await tableNames(kind, location)) {
    const from = kind === 'postgres' ? `"${location}".${name}` : `__alkstore_${name}`;
    const rows = await queryRows<{ n: number | string }>(kind, location, `SELECT count(*) AS n FROM ${from}`);
    out[name] = Number(rows[0]!.n);
  }
  return out;
}
