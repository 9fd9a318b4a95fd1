// Migration 22 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';
import { workflowTablesDdl } from '../../../workflows/tables-ddl.js';

/**
 * 22 `workflow_runs`, `workflow_counts`: the durable workflows' runs, one row per run (keyed by
 * namespace and id) with the indexes that list them by state and workflow in keyset pages, and the
 * counts per state the same statements keep. The journals stay the runs' streams.
 */
export const MIGRATION_22: PostgresMigration = {
  version: 22,
  name: 'workflow runs',
  sql: (s: string) => workflowTablesDdl(`${s}.`, 'bigint'),
};
