// Why PostgreSQL cannot be used for the tests, and how to fix it, in one line.
// Shared by global-setup.js (the skip line / the ALKSTORE_REQUIRE_PG failure)
// and its unit test.
import pg from 'pg';

/** The URL with its password masked, for printing. */
export function printableUrl(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable ALKSTORE_PG_URL)';
  }
}

/**
 * Tries the URL; resolves to null when PostgreSQL answers, else to
 * `{ reason, why, fix }` where reason is one of 'server-down', 'database-missing',
 * 'authentication', 'other'.
 */
export async function probePostgres(url, timeoutMs = 3000) {
  let client;
  try {
    client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    return diagnose(err, url);
  } finally {
    await client?.end().catch(() => undefined);
  }
}

/** Classifies a connection error. */
export function diagnose(err, url) {
  let u;
  try {
    u = new URL(url);
  } catch {
    return {
      reason: 'other',
      why: 'ALKSTORE_PG_URL is not a valid postgres:// URL',
      fix: 'set ALKSTORE_PG_URL=postgres://postgres@127.0.0.1:5432/test',
    };
  }
  const host = u.hostname || '127.0.0.1';
  const port = u.port || '5432';
  const user = decodeURIComponent(u.username || 'postgres');
  const database = decodeURIComponent(u.pathname.slice(1) || user);
  const codes = [err?.code, ...(Array.isArray(err?.errors) ? err.errors.map((e) => e?.code) : [])];
  const message = String(err?.message ?? err);
  if (codes.includes('3D000')) {
    return {
      reason: 'database-missing',
      why: `the server at ${host}:${port} is up but database "${database}" does not exist`,
      fix: `createdb -h ${host} -p ${port} -U ${user} ${database}`,
    };
  }
  if (codes.some((c) => c === '28P01' || c === '28000') || /password|SASL|authentication/i.test(message)) {
    return {
      reason: 'authentication',
      why: `the server at ${host}:${port} refused user "${user}" (${message})`,
      fix: `let ${user} connect to ${database} (e.g. trust for 127.0.0.1 in pg_hba.conf, or createuser -h ${host} -p ${port} -s ${user}), or set ALKSTORE_PG_URL with the right user and password`,
    };
  }
  if (
    codes.some(
      (c) =>
        c === 'ECONNREFUSED' || c === 'ENOTFOUND' || c === 'EHOSTUNREACH' || c === 'ETIMEDOUT' || c === 'EAI_AGAIN',
    ) ||
    /timeout|terminated/i.test(message)
  ) {
    return {
      reason: 'server-down',
      why: `no PostgreSQL server answers at ${host}:${port} (${message})`,
      fix: `start it (e.g. pg_ctlcluster <version> main start, or docker run -p ${port}:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres) and createdb -h ${host} -p ${port} -U ${user} ${database}`,
    };
  }
  return {
    reason: 'other',
    why: `connecting to ${printableUrl(url)} failed (${message})`,
    fix: 'check ALKSTORE_PG_URL',
  };
}
