// Migration 24 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 24 `nodes`: one heartbeat row per worker node (the dashboard's fleet view), refreshed every few
 * seconds by the node and deleted by the retention runner an hour after its last heartbeat.
 */
export const MIGRATION_24: PostgresMigration = {
  version: 24,
  name: 'worker node heartbeats',
  sql: (s: string) => `
CREATE TABLE ${s}.nodes (
  node_id text PRIMARY KEY,
  info text NOT NULL,
  heartbeat_at bigint NOT NULL
);
CREATE INDEX nodes_heartbeat ON ${s}.nodes (heartbeat_at);
`,
};
