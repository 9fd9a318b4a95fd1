// Probes PostgreSQL once per run. The result reaches the test workers through
// the environment (workers are forked after this runs).
import pg from 'pg';

export default async function globalSetup() {
  const url = process.env.ALKSTORE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  process.env.ALKSTORE_PG_URL = url;
  const required = process.env.ALKSTORE_REQUIRE_PG === '1';
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    process.env.ALKSTORE_PG_AVAILABLE = '1';
  } catch (err) {
    if (required) {
      throw new Error(`PostgreSQL is required (ALKSTORE_REQUIRE_PG=1) but ${url} is not reachable: ${err.message}`);
    }
    process.env.ALKSTORE_PG_AVAILABLE = '0';
    console.log(`\nalkstore: PostgreSQL at ${url} is not reachable; the PostgreSQL suites are skipped.\n`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
