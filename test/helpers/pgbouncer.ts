// Starts Debian's pgbouncer in front of the test PostgreSQL: its own config in
// a temp dir, a free port, `pool_mode = transaction`, trust auth. `.ci/run`
// installs the package when it is missing; elsewhere the suite that needs it
// is skipped with one line (a failure with CI=true).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PG_URL } from './engines.js';

const BINARIES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The pgbouncer binary, or null when it is not installed. */
export function pgbouncerBinary(): string | null {
  return BINARIES.find((b) => existsSync(b)) ?? null;
}

/** Why a PgBouncer suite cannot run here, or null. */
export function pgbouncerMissing(): string | null {
  return pgbouncerBinary() === null
    ? 'pgbouncer is not installed (apt-get install -y pgbouncer; .ci/run does it)'
    : null;
}

export interface RunningPgBouncer {
  /** `postgres://…` through the pooler, to the test database. */
  readonly url: string;
  /** `default_pool_size`: how many server connections it keeps per database and user. */
  readonly poolSize: number;
  /** `pgbouncer --version`'s first line. */
  readonly version: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts pgbouncer in transaction mode in front of `PG_URL` and waits until it answers a query. */
export async function startPgBouncer(poolSize = 3): Promise<RunningPgBouncer> {
  const bin = pgbouncerBinary();
  if (bin === null) throw new Error(pgbouncerMissing() ?? 'pgbouncer is not installed');
  const target = new URL(PG_URL);
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-pgbouncer-'));
  // pgbouncer refuses to run as root; `-u` drops to another user, who must read the config.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const user = decodeURIComponent(target.username || 'postgres');
  const database = target.pathname.slice(1) || 'test';
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = host=${target.hostname} port=${target.port || '5432'} dbname=${database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 200',
      // pg sends none of these, but other clients do; they are harmless to ignore.
      'ignore_startup_parameters = extra_float_digits,options',
      '',
    ].join('\n'),
  );
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0] ?? 'pgbouncer';
  const child: ChildProcess = spawn(bin, [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited at start (${child.exitCode}): ${stderr}`);
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => undefined);
    try {
      await c.connect();
      await c.query('SELECT 1');
      await c.end();
      break;
    } catch (err) {
      await c.end().catch(() => undefined);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`pgbouncer did not accept connections within 15 s: ${String(err)}; ${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    poolSize,
    version,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What a server connection behind the pooler still carries from earlier clients. */
export interface SessionResidue {
  backendPid: number;
  listening: string[];
  preparedStatements: string[];
  sessionSettings: string[];
  advisoryLocks: number;
  tempTables: number;
}

// Parameters pgbouncer itself sets on server connections to match each client.
const POOLER_PARAMETERS = new Set([
  'application_name',
  'client_encoding',
  'datestyle',
  'timezone',
  'standard_conforming_strings',
  'intervalstyle',
]);

/**
 * Inspects every server connection of the pooler's pool: `poolSize` clients
 * each open a transaction and hold it, so each sits on a different server
 * connection, and report what session state that connection carries.
 */
export async function serverSessionResidue(bouncer: RunningPgBouncer): Promise<SessionResidue[]> {
  const clients: pg.Client[] = [];
  try {
    const found: SessionResidue[] = [];
    for (let i = 0; i < bouncer.poolSize; i += 1) {
      const c = new pg.Client({ connectionString: bouncer.url });
      c.on('error', () => undefined);
      await c.connect();
      clients.push(c);
      await c.query('BEGIN');
      const one = async <R extends pg.QueryResultRow>(text: string): Promise<R[]> => (await c.query<R>(text)).rows;
      found.push({
        backendPid: (await one<{ pid: number }>('SELECT pg_backend_pid() AS pid'))[0]?.pid ?? 0,
        listening: (await one<{ ch: string }>('SELECT pg_listening_channels() AS ch')).map((r) => r.ch),
        preparedStatements: (
          await one<{ name: string }>("SELECT name FROM pg_prepared_statements WHERE name <> ''")
        ).map((r) => r.name),
        sessionSettings: (await one<{ name: string }>("SELECT name FROM pg_settings WHERE source = 'session'"))
          .map((r) => r.name)
          .filter((n) => !POOLER_PARAMETERS.has(n.toLowerCase())),
        advisoryLocks: Number(
          (
            await one<{ n: string }>(
              "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()",
            )
          )[0]?.n ?? 0,
        ),
        tempTables: Number(
          (await one<{ n: string }>('SELECT count(*) AS n FROM pg_class WHERE relnamespace = pg_my_temp_schema()'))[0]
            ?.n ?? 0,
        ),
      });
    }
    return found;
  } finally {
    for (const c of clients) await c.query('ROLLBACK').catch(() => undefined);
    for (const c of clients) await c.end().catch(() => undefined);
  }
}
