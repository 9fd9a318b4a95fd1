// Migration 20 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 20 bounded growth: the retention runner removes an inbox's failed and dead entries by when they
 * were first received. Claims insert `done` rows, which this partial index leaves out, so the
 * claim's cost does not change; only a failed attempt (and the claim that takes over its row) writes
 * an entry here.
 */
export const MIGRATION_20: PostgresMigration = {
  version: 20,
  name: 'bounded growth',
  sql: (s: string) => `
CREATE INDEX inbox_open_idx ON ${s}.inbox (inbox, received_at) WHERE state <> 'done';
`,
};
