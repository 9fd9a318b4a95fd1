import type { ClientConfig, Pool } from 'pg';
import { Database } from '../../contract/errors.js';

/** The SQLSTATE PostgreSQL reports when the database a connection names does not exist. */
const NO_SUCH_DATABASE = '3D000';

/** Host, port, user and database of a connection, as far as its config or URL gives them. */
interface Target {
  readonly host?: string;
  readonly port?: string;
  readonly user?: string;
  readonly database?: string;
}

function targetOf(config: ClientConfig | undefined): Target {
  if (config?.connectionString !== undefined) {
    try {
      const u = new URL(config.connectionString);
      return {
        host: u.hostname || undefined,
        port: u.port || undefined,
        user: u.username ? decodeURIComponent(u.username) : undefined,
        database: decodeURIComponent(u.pathname.replace(/^\//, '')) || undefined,
      };
    } catch {
      return {};
    }
  }
  return {
    host: typeof config?.host === 'string' ? config.host : undefined,
    port: config?.port === undefined ? undefined : String(config.port),
    user: config?.user,
    database: config?.database,
  };
}

/**
 * The `createdb` command for the database a connection config or URL names, with the host, port
 * and user it gives (never its password). The database defaults as PostgreSQL's does: the user's name.
 */
export function createdbCommand(config: ClientConfig | string | undefined): string {
  const t = targetOf(typeof config === 'string' ? { connectionString: config } : config);
  const args = [
    t.host && `-h ${t.host}`,
    t.port && `-p ${t.port}`,
    t.user && `-U ${t.user}`,
    t.database ?? t.user ?? 'postgres',
  ].filter(Boolean);
  return `createdb ${args.join(' ')}`;
}

/** Whether an error, or one along its `cause` chain, carries the SQLSTATE `state`. */
export function hasSqlState(err: unknown, state: string): boolean {
  for (
    let e: unknown = err, i = 0;
    e !== null && typeof e === 'object' && i < 8;
    e = (e as { cause?: unknown }).cause, i++
  ) {
    if ((e as { code?: unknown }).code === state) return true;
  }
  return false;
}

/**
 * The store's first connection, taken from its pool before the LISTEN connection starts: a server
 * that cannot be reached, or refuses the user, or has no such database fails the open here with
 * one `Database` error, instead of a LISTEN warning first. A database that does not exist is named
 * with the `createdb` that makes it. The connection goes back to the pool for the migrations.
 */
export async function firstConnection(pool: Pool, config: ClientConfig | undefined): Promise<void> {
  try {
    const client = await pool.connect();
    client.release();
  } catch (err) {
    if (hasSqlState(err, NO_SUCH_DATABASE)) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new Database(
        'connecting to PostgreSQL',
        new Error(`${reason}: create it with \`${createdbCommand(config)}\``, { cause: err }),
      );
    }
    throw new Database('connecting to PostgreSQL', err);
  }
}
