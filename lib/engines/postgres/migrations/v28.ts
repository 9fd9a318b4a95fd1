// Migration 28 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 28 `worker_liveness`: the worker ids that claims record in `jobs.worker_id` and that a live
 * process vouches for with a shared session advisory lock (liveness.ts). A row says "this id is
 * watched": a store adds it, after taking the lock, before its first claim with the id; the dead
 * worker sweep removes it when no session holds the lock any more, and ends the leases of the id's
 * jobs in the same transaction. Ids without a row (claims of a store with `workerLiveness: false`,
 * of an older alkstore, or without a worker id) are never judged: their jobs wait for their lease.
 */
export const MIGRATION_28: PostgresMigration = {
  version: 28,
  name: 'worker liveness',
  sql: (s: string) => `
CREATE TABLE ${s}.worker_liveness (
  worker_id text PRIMARY KEY,
  registered_at bigint NOT NULL
);
`,
};
