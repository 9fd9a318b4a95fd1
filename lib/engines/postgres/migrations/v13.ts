// Migration 13 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/** Histogram buckets per kind; their bounds are `LATENCY_BOUNDS_MS` (lib/contract/admin.ts). Fixed by this step. */
const BUCKETS = 12;

function histogram(prefix: string): string {
  return Array.from({ length: BUCKETS }, (_, i) => `  ${prefix}${i} bigint NOT NULL DEFAULT 0,`).join('\n');
}

/**
 * 13 per-minute latency (the dashboard's latency charts): wait (due to claim) and run (claim to
 * outcome) per queue and minute, as count, sum and a fixed histogram. Written by the same periodic
 * flush of the outcome counter that writes `queue_minutes` (lib/internal/outcome-counter.ts), in the
 * same statement, never per job; pruned with it after a day.
 */
export const MIGRATION_13: PostgresMigration = {
  version: 13,
  name: 'per-minute queue latency',
  sql: (s: string) => `
CREATE TABLE ${s}.queue_latency (
  queue text NOT NULL,
  minute bigint NOT NULL,
  wait_n bigint NOT NULL DEFAULT 0,
  wait_ms bigint NOT NULL DEFAULT 0,
${histogram('w')}
  run_n bigint NOT NULL DEFAULT 0,
  run_ms bigint NOT NULL DEFAULT 0,
${histogram('r')}
  PRIMARY KEY (queue, minute)
);
CREATE INDEX queue_latency_minute_idx ON ${s}.queue_latency (minute);
`,
};
