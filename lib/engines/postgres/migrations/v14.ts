// Migration 14 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 14 job attempts (the job page's timeline, issue #29): one row per attempt that ended in failure,
 * written by the worker's `retry` / `fail` statement itself (a first-attempt ack writes nothing).
 * `claimed_at` is derived from the row as `claimed_until - visibility_timeout_ms` (see
 * docs/operations.md). Rows of jobs gone from both `jobs` and `job_outcomes` are pruned by the sweep.
 */
export const MIGRATION_14: PostgresMigration = {
  version: 14,
  name: 'job attempts',
  sql: (s: string) => `
CREATE TABLE ${s}.job_attempts (
  job_id bigint NOT NULL,
  queue text NOT NULL,
  attempt integer NOT NULL,
  worker_id text,
  claimed_at bigint,
  ended_at bigint NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('retried', 'dead', 'lapsed')),
  error text,
  PRIMARY KEY (job_id, attempt)
);
CREATE INDEX job_attempts_queue_idx ON ${s}.job_attempts (queue, job_id);
`,
};
