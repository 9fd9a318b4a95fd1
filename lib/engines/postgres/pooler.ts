// PostgreSQL only: connection poolers (PgBouncer, Supavisor, RDS Proxy) between the store and the server; SQLite has no server.
/**
 * Connection poolers in front of PostgreSQL (PgBouncer, Supavisor, RDS Proxy).
 *
 * In transaction mode a client is given a server connection for one
 * transaction only: session state (LISTEN, named prepared statements, `SET`,
 * session advisory locks, temp tables) stays behind on a connection that
 * serves someone else next. The engine never relies on session state except
 * in two places this file switches: named prepared statements (off behind a
 * transaction pooler) and the LISTEN connection (given its own URL past the
 * pooler, or replaced by polling).
 */
import type { Client } from 'pg';
import { InvalidOption } from '../../contract/errors.js';

/** How the connection string reaches PostgreSQL: directly (or through a session-mode pooler), or through a transaction-mode pooler. */
export type PoolerMode = 'none' | 'session' | 'transaction';

const MODES: readonly PoolerMode[] = ['none', 'session', 'transaction'];

/** How long a LISTEN connection that looks pooled may take to receive its own probe before it is refused (ms). */
export const LISTEN_PROBE_MS = 2_000;

export function poolerOption(v: unknown): PoolerMode {
  if (v === undefined) return 'none';
  if (typeof v === 'string' && (MODES as readonly string[]).includes(v)) return v as PoolerMode;
  throw new InvalidOption(
    'pooler',
    `must be one of ${MODES.map((m) => JSON.stringify(m)).join(', ')} (got ${typeof v === 'string' ? JSON.stringify(v) : typeof v})`,
  );
}

export function listenUrlOption(v: unknown, listen: boolean | undefined): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^postgres(ql)?:\/\//i.test(v)) {
    throw new InvalidOption(
      'listenUrl',
      'must be a postgres:// or postgresql:// URL of a direct connection (not through a transaction-mode pooler)',
    );
  }
  if (listen === false) throw new InvalidOption('listenUrl', 'and listen: false contradict each other: drop one');
  return v;
}

/** `host:port/database` of a URL, for the startup log line (never the user or password). */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return 'the given URL';
  }
}

/**
 * Refuses a LISTEN connection whose notifications can never arrive: one
 * through a transaction-mode pooler. A direct connection is recognised at
 * once (the backend pid the server reports is the one the connection's
 * startup announced; a pooler announces its own). A pooled one must receive a
 * probe notification sent through the store's pool within
 * {@link LISTEN_PROBE_MS}: a session-mode pooler passes, a transaction-mode
 * one never does.
 */
export async function verifyListenConnection(
  client: Client,
  channel: string,
  notify: (channel: string, payload: string) => Promise<unknown>,
  input: 'listenUrl' | 'connectionString' | 'pool',
): Promise<void> {
  const r = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  if (r.rows[0]?.pid === (client as unknown as { processID: number | null }).processID) return;
  const token = `probe:${Math.random().toString(36).slice(2)}`;
  let onNotice: ((m: { channel: string; payload?: string }) => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const arrived = new Promise<boolean>((resolve) => {
    onNotice = (m) => {
      if (m.channel === channel && m.payload === token) resolve(true);
    };
    client.on('notification', onNotice);
    timer = setTimeout(() => resolve(false), LISTEN_PROBE_MS);
  });
  try {
    await notify(channel, token);
    if (await arrived) return;
  } finally {
    clearTimeout(timer);
    if (onNotice) client.removeListener('notification', onNotice);
  }
  throw new InvalidOption(
    input,
    input === 'listenUrl'
      ? 'goes through a transaction-mode connection pooler: LISTEN notifications never arrive through ' +
          'it. Point listenUrl at PostgreSQL itself (or a session-mode pooler), or drop it to poll'
      : 'goes through a transaction-mode connection pooler: LISTEN notifications never arrive through it (and ' +
          'named prepared statements break). Set pooler: "transaction", plus listenUrl pointing at PostgreSQL ' +
          'itself to keep wakes on commit, or nothing more to poll every wakeFallbackMs',
  );
}
