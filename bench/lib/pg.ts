import pg from 'pg';
import { PG_URL, withTimeout } from './util.js';

/** A short-lived client on the bench database (127.0.0.1 only). */
export async function pgClient(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5000 });
  await withTimeout('connect to PostgreSQL', 6000, c.connect());
  return c;
}

export async function pgAvailable(): Promise<string | null> {
  if (!/@(127\.0\.0\.1|localhost)(:\d+)?\//.test(PG_URL)) return `refusing non-local PostgreSQL URL ${PG_URL}`;
  try {
    const c = await pgClient();
    await c.end();
    return null;
  } catch (err) {
    return `PostgreSQL not reachable at ${PG_URL}: ${(err as Error).message}`;
  }
}

export async function pgExec(sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const c = await pgClient();
  try {
    return await c.query(sql, params);
  } finally {
    await c.end();
  }
}

export async function dropSchema(schema: string): Promise<void> {
  await pgExec(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
}

/** The server's fsync / synchronous_commit / autovacuum, recorded with the results. */
export async function pgServerSettings(): Promise<Record<string, string>> {
  const r = await pgExec(
    "SELECT name, setting FROM pg_settings WHERE name IN ('server_version','fsync','synchronous_commit','wal_sync_method','shared_buffers','max_connections','autovacuum','full_page_writes')",
  );
  const out: Record<string, string> = {};
  for (const row of r.rows as { name: string; setting: string }[]) out[row.name] = row.setting;
  return out;
}
