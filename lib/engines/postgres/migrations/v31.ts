// Migration 31 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 31 `idle_takers`: the cross-process hand-off's registrations (remote-handoff.ts). A row is one
 * handler slot of an idle worker of `queue`, offered to the plain enqueues of every store of the
 * schema; `taker` is random per registration, and the store's LISTEN session holds a session
 * advisory lock on it for as long as the row is offered (a row whose lock is free is dead and takes
 * nothing). An enqueue that takes the slot sets `token` (the job's claim token) and `job_id` in the
 * statement that inserts the job already claimed; the worker deletes its row before its next claim
 * and reads what it left. Soft state, written with `synchronous_commit = off`: a row lost in a crash
 * is a worker that was not offered.
 */
export const MIGRATION_31: PostgresMigration = {
  version: 31,
  name: 'idle takers',
  sql: (s: string) => `
CREATE TABLE ${s}.idle_takers (
  taker integer PRIMARY KEY,
  queue text NOT NULL,
  worker_id text NOT NULL,
  lease_ms bigint,
  token uuid,
  job_id bigint
);
CREATE INDEX idle_takers_queue ON ${s}.idle_takers (queue);
`,
};
