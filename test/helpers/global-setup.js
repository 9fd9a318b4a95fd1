// Probes PostgreSQL once per run. The result reaches the test workers through
// the environment (workers are forked after this runs). When PostgreSQL cannot
// be used, one line says why (server down, database missing, authentication)
// and how to fix it; with ALKSTORE_REQUIRE_PG=1 the same line fails the run.
import { printableUrl, probePostgres } from './pg-diagnose.js';

export default async function globalSetup() {
  const url = process.env.ALKSTORE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  process.env.ALKSTORE_PG_URL = url;
  const required = process.env.ALKSTORE_REQUIRE_PG === '1';
  const problem = await probePostgres(url);
  if (problem === null) {
    process.env.ALKSTORE_PG_AVAILABLE = '1';
    return;
  }
  const line = `PostgreSQL at ${printableUrl(url)} cannot be used: ${problem.why}. Fix: ${problem.fix}`;
  if (required) throw new Error(`alkstore: ALKSTORE_REQUIRE_PG=1 and ${line}`);
  process.env.ALKSTORE_PG_AVAILABLE = '0';
  console.log(`\nalkstore: ${line}; the PostgreSQL suites are skipped (ALKSTORE_REQUIRE_PG=1 makes this a failure).\n`);
}
