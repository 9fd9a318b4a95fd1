// Migration 33 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 33 `key_rate_used` reads its keys' windows by primary key (queue, key), one lookup per key. Its
 * query (migration 19) compared the queue, the period and `key = ANY (keys)`: with statistics of a
 * small windows table, PostgreSQL served it by the queue alone (through the full-windows index, or
 * the primary key with the keys as a filter) and read the window of every key of the queue to return
 * the few it was asked for. Each key is now a lookup of its own (`LATERAL … LIMIT 1` on both primary
 * key columns), the period is compared as `window_start + 0`, and the full-windows index leads with
 * the period, (window_start, queue, window_count), so no index serves the queue alone there; it still
 * serves `key_rate_full` (period and queue equal, the count a range). Same signature and result.
 */
export const MIGRATION_33: PostgresMigration = {
  version: 33,
  name: 'rate windows read by primary key',
  sql: (s: string) => `
DROP INDEX ${s}.key_rate_windows_window_idx;
CREATE INDEX key_rate_windows_window_idx ON ${s}.key_rate_windows (window_start, queue, window_count);
CREATE OR REPLACE FUNCTION ${s}.key_rate_used(p_queue text, p_window bigint, p_keys text[])
RETURNS TABLE (key text, n bigint) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RETURN QUERY SELECT w.key, w.window_count::bigint FROM (SELECT DISTINCT u.k FROM unnest(p_keys) AS u(k)) k
    CROSS JOIN LATERAL (
      SELECT x.key, x.window_count FROM ${s}.key_rate_windows x
      WHERE x.queue = p_queue AND x.key = k.k AND x.window_start + 0 = p_window LIMIT 1) w;
END
$fn$;
`,
};
