// Migration 11 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 11 job flows (SPEC §11, docs/flows.md): `job_deps` holds one edge per (dependent job, dependency),
 * `job_waits` one row per job that waits for dependencies, with the count still pending (a row
 * lock serialises the last two acks) and its policy. A waiting job is a pending row held back by
 * the existing `blocked` flag, so the jobs table, its indexes, counters and claim statements stay
 * as they were.
 */
export const MIGRATION_11: PostgresMigration = {
  version: 11,
  name: 'job flows',
  sql: (s: string) => `
CREATE TABLE ${s}.job_waits (
  job_id bigint PRIMARY KEY,
  queue text NOT NULL,
  pending integer NOT NULL,
  policy text NOT NULL CHECK (policy IN ('fail', 'ignore', 'continue'))
);
CREATE TABLE ${s}.job_deps (
  job_id bigint NOT NULL,
  dep_id bigint NOT NULL,
  dep_queue text NOT NULL,
  done boolean NOT NULL DEFAULT false,
  outcome text CHECK (outcome IN ('completed', 'dead', 'cancelled')),
  PRIMARY KEY (job_id, dep_id)
);
CREATE INDEX job_deps_dep_idx ON ${s}.job_deps (dep_id) WHERE NOT done;
`,
};
