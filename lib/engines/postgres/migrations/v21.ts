// Migration 21 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';
import { pgLiteral } from './v1-3.js';

/**
 * 21 `ordering_try_lock`: the ordering-key lock of `ordering_lock` (migration 3), taken only when no
 * other transaction holds it. A statement of alkstore's that ends jobs of several keys (a batched ack,
 * a claim that buries lapsed jobs, the expiry sweep) tries each key's lock before it touches that
 * key's rows and leaves the jobs of keys held elsewhere for later, so it never waits for a key while
 * holding another: a producer's transaction that takes keys in any order cannot close a cycle with it.
 */
export const MIGRATION_21: PostgresMigration = {
  version: 21,
  name: 'ordering key try-lock',
  sql: (s: string) => `
-- plpgsql, so never inlined: at its cost (100, the default) the planner evaluates every cheaper
-- condition of a scan first, so a statement tries the keys of the rows it ends, not of every row its
-- scan reads. (A much higher cost would make a batched ack of a few jobs plan anew on every call.)
CREATE FUNCTION ${s}.ordering_try_lock(p_queue text, p_key text) RETURNS boolean LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN pg_try_advisory_xact_lock(hashtextextended(p_key, hashtextextended(${pgLiteral(s)} || '/' || p_queue, 7)));
END
$fn$;
`,
};
