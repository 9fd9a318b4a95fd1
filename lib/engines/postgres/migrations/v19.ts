// Migration 19 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 19 per-key rate windows read by key (docs/limits.md). The limited claim used to read every window
 * row of its queue (`limit_counts`, kind 'r'), so its cost grew with every `rateLimitKey` ever used.
 * It now reads the windows of the current period that are full (`key_rate_full`, a range of the new
 * index) and those of its candidates' keys (`key_rate_used`, by primary key). Both are VOLATILE for
 * the reason `limit_counts` is: called after the claim locked the queue's settings row, their
 * queries take a fresh snapshot that sees every claim committed before the lock was granted.
 * `limit_counts` is kept as it was for stores of the previous release during an upgrade.
 */
export const MIGRATION_19: PostgresMigration = {
  version: 19,
  name: 'rate windows read by key',
  sql: (s: string) => `
CREATE INDEX key_rate_windows_window_idx ON ${s}.key_rate_windows (queue, window_start, window_count);
CREATE FUNCTION ${s}.key_rate_full(p_queue text, p_window bigint, p_max integer)
RETURNS TABLE (key text) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RETURN QUERY SELECT w.key FROM ${s}.key_rate_windows w
    WHERE w.queue = p_queue AND w.window_start = p_window AND w.window_count >= p_max;
END
$fn$;
CREATE FUNCTION ${s}.key_rate_used(p_queue text, p_window bigint, p_keys text[])
RETURNS TABLE (key text, n bigint) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RETURN QUERY SELECT w.key, w.window_count::bigint FROM ${s}.key_rate_windows w
    WHERE w.queue = p_queue AND w.key = ANY (p_keys) AND w.window_start = p_window;
END
$fn$;
`,
};
