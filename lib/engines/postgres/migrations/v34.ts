// Migration 34 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';
import { workflowStepsDdl } from '../../../workflows/tables-ddl.js';

/**
 * 34 `workflow_steps`: a workflow run's positioned journal entries (a step's outcome, a retry, a
 * sleep, a wait, a join), one row each, keyed by namespace, run, position and the entry's key, whose
 * primary key is the entry's once-only guard. Before it each was an inbox guard, a stream head update
 * and a stream event. Runs journaled before it keep their stream entries, which are read with the rows.
 */
export const MIGRATION_34: PostgresMigration = {
  version: 34,
  name: 'workflow steps',
  sql: (s: string) => workflowStepsDdl(`${s}.`, 'bigint'),
};
