// Per-key concurrency, per-key rate limits and global concurrency on SQLite (docs/limits.md): the statements of limits.ts.

/** Migration 12's new tables (fresh files and upgrades; idempotent). Columns are added by the step's `addColumns`. */
export const LIMITS_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_key_rate_windows (
  queue TEXT NOT NULL,
  key TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  window_count INTEGER NOT NULL,
  PRIMARY KEY (queue, key)
) WITHOUT ROWID;
`;

/** Migration 12's columns. */
export const LIMITS_COLUMNS: readonly { table: string; column: string; type: string }[] = [
  { table: '__alkstore_jobs', column: 'concurrency_key', type: 'TEXT' },
  { table: '__alkstore_jobs', column: 'rate_key', type: 'TEXT' },
  { table: '__alkstore_queue_settings', column: 'keyed', type: 'INTEGER NOT NULL DEFAULT 0' },
  { table: '__alkstore_queue_settings', column: 'concurrency_limit', type: 'INTEGER' },
  { table: '__alkstore_queue_settings', column: 'global_concurrency', type: 'INTEGER' },
  { table: '__alkstore_queue_settings', column: 'key_rate_max', type: 'INTEGER' },
  { table: '__alkstore_queue_settings', column: 'key_rate_per_ms', type: 'INTEGER' },
];

/**
 * Step 23: the windows of a queue's running period that are full are one range of this index
 * (`window_start` equal, `window_count` at least the max), so the claim's scan can leave their keys
 * out without reading a row per key used in the period.
 */
export const RATE_WINDOWS_INDEX_DDL = `
CREATE INDEX IF NOT EXISTS __alkstore_key_rate_windows_window
  ON __alkstore_key_rate_windows (queue, window_start, window_count);
`;

/** Created after the steps ran (the columns may be new). */
export const LIMITS_INDEX_DDL = `
CREATE INDEX IF NOT EXISTS __alkstore_jobs_concurrency
  ON __alkstore_jobs (queue, concurrency_key) WHERE concurrency_key IS NOT NULL AND state = 'processing';
`;

/** The first keyed enqueue of a queue marks it (the claim then counts keys): queue. */
export const MARK_KEYED = `INSERT INTO __alkstore_queue_settings (queue, keyed) VALUES (?, 1)
  ON CONFLICT (queue) DO UPDATE SET keyed = 1 WHERE keyed = 0`;

export const LIVE_PROCESSING = `queue = @queue AND state = 'processing' AND claimed_until > @now`;
export const BUSY_TOTAL = `SELECT count(*) AS n FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing WHERE ${LIVE_PROCESSING}`;
export const BUSY_KEYS = `SELECT concurrency_key AS k, count(*) AS n FROM __alkstore_jobs INDEXED BY __alkstore_jobs_concurrency
  WHERE concurrency_key IS NOT NULL AND ${LIVE_PROCESSING} GROUP BY concurrency_key`;
export const GET_KEY_WINDOW = `SELECT window_start, window_count FROM __alkstore_key_rate_windows WHERE queue = ? AND key = ?`;
export const SET_KEY_WINDOW = `INSERT INTO __alkstore_key_rate_windows (queue, key, window_start, window_count) VALUES (?, ?, ?, ?)
  ON CONFLICT (queue, key) DO UPDATE SET window_start = excluded.window_start, window_count = excluded.window_count`;
export const CLEAR_KEY_WINDOWS = `DELETE FROM __alkstore_key_rate_windows WHERE queue = ?`;
/**
 * The per-key rate windows no claim can read again (of the queues `where` selects): their period
 * ended, or their queue has no key rate limit any more. A deleted window reads as an empty one,
 * which is what an ended window counts for (`rateAllowance`).
 */
export const endedWindows = (
  where: string,
): string => `DELETE FROM __alkstore_key_rate_windows AS w WHERE ${where} AND NOT EXISTS (
  SELECT 1 FROM __alkstore_queue_settings s
  WHERE s.queue = w.queue AND s.key_rate_max IS NOT NULL AND s.key_rate_per_ms IS NOT NULL
    AND w.window_start + s.key_rate_per_ms > @now)`;
export const SWEEP_KEY_WINDOWS = endedWindows('w.queue = @queue');
export const SWEEP_ALL_KEY_WINDOWS = endedWindows('1');
export const ENSURE_SETTINGS = `INSERT INTO __alkstore_queue_settings (queue) VALUES (?) ON CONFLICT (queue) DO NOTHING`;
export const SET_LIMITS = `UPDATE __alkstore_queue_settings SET
  concurrency_limit = CASE WHEN @setC THEN @c ELSE concurrency_limit END,
  global_concurrency = CASE WHEN @setG THEN @g ELSE global_concurrency END,
  key_rate_max = CASE WHEN @setR THEN @rmax ELSE key_rate_max END,
  key_rate_per_ms = CASE WHEN @setR THEN @rper ELSE key_rate_per_ms END
  WHERE queue = @queue`;

/**
 * The rate keys of a queue whose window of the running period is full (queue, window start, max):
 * one range of step 23's index, so its cost follows the full keys, not the keys used in the period.
 */
export const RATE_FULL_KEYS = `SELECT key FROM __alkstore_key_rate_windows INDEXED BY __alkstore_key_rate_windows_window
  WHERE queue = ? AND window_start = ? AND window_count >= ?`;

// Claim candidates of keys not yet at their limit, pending and lapsed, in claim order. @full: a JSON
// array of the concurrency keys at their limit; @rfull: a JSON array of the rate keys whose window is full.
export const COLS = 'id, priority, run_at, attempts, max_attempts, ordering_key, concurrency_key, rate_key';
export const CONCURRENCY_NOT_FULL = `(concurrency_key IS NULL OR concurrency_key NOT IN (SELECT value FROM json_each(@full)))`;
export const RATE_NOT_FULL = `(rate_key IS NULL OR rate_key NOT IN (SELECT value FROM json_each(@rfull)))`;
export const candidatesSql = (notFull: string): string => `
SELECT ${COLS}, 0 AS lapsed FROM (
  SELECT ${COLS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
  WHERE queue = @queue AND state = 'pending' AND blocked = 0 AND +run_at <= @now AND (expires_at IS NULL OR expires_at > @now) AND ${notFull}
  ORDER BY priority DESC, run_at, id LIMIT @limit)
UNION ALL
SELECT ${COLS}, 1 AS lapsed FROM (
  SELECT ${COLS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
  WHERE queue = @queue AND state = 'processing' AND claimed_until <= @now AND (expires_at IS NULL OR expires_at > @now) AND ${notFull}
  ORDER BY priority DESC, run_at, id LIMIT @limit)
ORDER BY priority DESC, run_at, id LIMIT @limit`;
/** The limited claim's candidates when no rate key is full: @queue, @now, @limit, @full. */
export const LIMITED_CANDIDATES = candidatesSql(CONCURRENCY_NOT_FULL);
/**
 * {@link LIMITED_CANDIDATES} that also leaves out the rate keys of @rfull. Taken only when some key's
 * window is full, so the claims of a queue with none pay no filter per row read.
 */
export const LIMITED_CANDIDATES_RATE = candidatesSql(`${CONCURRENCY_NOT_FULL} AND ${RATE_NOT_FULL}`);
