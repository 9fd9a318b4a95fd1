// Migration 10 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 10 job outcomes and progress (SPEC §11): a job acked with a result (or progress, or a waiter) and
 * a cancelled job move to `job_outcomes` in the statement that ends them, so the jobs table, its
 * partial indexes and its counters keep only live and dead rows, and a plain ack still just deletes.
 */
export const MIGRATION_10: PostgresMigration = {
  version: 10,
  name: 'job outcomes and progress',
  sql: (s: string) => `
ALTER TABLE ${s}.jobs ADD COLUMN progress json;
CREATE TABLE ${s}.job_outcomes (
  id bigint PRIMARY KEY,
  queue text NOT NULL,
  state text NOT NULL CHECK (state IN ('completed', 'cancelled')),
  payload json NOT NULL,
  priority integer NOT NULL,
  attempts integer NOT NULL,
  max_attempts integer NOT NULL,
  visibility_timeout_ms bigint NOT NULL,
  backoff_base_ms bigint NOT NULL,
  dead_letter_retention_ms bigint,
  run_at bigint NOT NULL,
  enqueued_at bigint NOT NULL,
  expires_at bigint,
  headers json,
  unique_key text,
  ordering_key text,
  result json,
  progress json,
  finished_at bigint NOT NULL,
  keep_until bigint
);
CREATE INDEX job_outcomes_keep_idx ON ${s}.job_outcomes (queue, keep_until) WHERE keep_until IS NOT NULL;
`,
};
