// The workflows' own tables, one DDL text per engine: the engines' migrations import it (PostgreSQL
// migration 22, SQLite step 24), the workflows' code (runs.ts) reads and writes them.

/**
 * The runs table (one row per run, keyed by namespace and id), its listing indexes (by state, by
 * workflow and state, each ordered by start then id for keyset paging; finished runs by end time, for
 * retention) and the counts of runs per state: delta rows the statements that move a run append (no
 * writer waits on a shared row), folded into one row per state now and then.
 * `prefix` qualifies the names: `"schema".` on PostgreSQL, `__alkstore_` on SQLite.
 */
export function workflowTablesDdl(prefix: string, bigint: 'bigint' | 'INTEGER'): string {
  return `
CREATE TABLE IF NOT EXISTS ${prefix}workflow_runs (
  ns text NOT NULL,
  id text NOT NULL,
  workflow text NOT NULL,
  version ${bigint} NOT NULL,
  state text NOT NULL,
  input text,
  result text,
  error text,
  parent_id text,
  waiting text,
  created_at ${bigint} NOT NULL,
  updated_at ${bigint} NOT NULL,
  finished_at ${bigint},
  wake_at ${bigint},
  PRIMARY KEY (ns, id)
);
CREATE INDEX IF NOT EXISTS ${prefix.endsWith('.') ? '' : prefix}workflow_runs_by_state ON ${prefix}workflow_runs (ns, state, created_at, id);
CREATE INDEX IF NOT EXISTS ${prefix.endsWith('.') ? '' : prefix}workflow_runs_by_workflow ON ${prefix}workflow_runs (ns, workflow, state, created_at, id);
CREATE INDEX IF NOT EXISTS ${prefix.endsWith('.') ? '' : prefix}workflow_runs_by_start ON ${prefix}workflow_runs (ns, created_at, id);
CREATE INDEX IF NOT EXISTS ${prefix.endsWith('.') ? '' : prefix}workflow_runs_finished ON ${prefix}workflow_runs (ns, finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS ${prefix}workflow_counts (
  ns text NOT NULL,
  state text NOT NULL,
  n ${bigint} NOT NULL
);
CREATE INDEX IF NOT EXISTS ${prefix.endsWith('.') ? '' : prefix}workflow_counts_ns ON ${prefix}workflow_counts (ns, state);
`;
}

/**
 * The steps table: a run's positioned journal entries (a step's outcome, a retry, a sleep, a wait, a
 * join), one row each, keyed by namespace, run, position and `key` (what the entry is at its position in
 * the run's retry epoch: `3`, `3/r1`, `3/s`, `3@1`). The primary key is the entry's once-only guard: a
 * second write of a key writes nothing. The run's other entries (its start, signals, cancellation,
 * retries, its end) stay in its stream. `entry` is the stored form's JSON text.
 */
export function workflowStepsDdl(prefix: string, bigint: 'bigint' | 'INTEGER'): string {
  return `
CREATE TABLE IF NOT EXISTS ${prefix}workflow_steps (
  ns text NOT NULL,
  run_id text NOT NULL,
  position integer NOT NULL,
  key text NOT NULL,
  entry text NOT NULL,
  created_at ${bigint} NOT NULL,
  PRIMARY KEY (ns, run_id, position, key)
)${bigint === 'INTEGER' ? ' WITHOUT ROWID' : ''};
`;
}

/**
 * The state of the run row `alias` (`r.state`, or `state` without one), in a form no index serves: for a
 * lookup by id that also checks the state. PostgreSQL otherwise rates `workflow_runs_by_state`
 * (ns, state, …, id) as cheap as the primary key once its statistics say few runs are running, and then
 * reads the entry of every running run, parked ones included, for each run it looks up.
 */
export function runStateOf(alias?: string): string {
  return `(${alias === undefined ? '' : `${alias}.`}state || '')`;
}
