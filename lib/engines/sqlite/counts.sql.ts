/**
 * Per-queue job counters for `stats()` in constant time (SQLite step 4; plain batches count themselves, step 17).
 *
 * Row triggers on `__alkstore_jobs` keep one counter row per (queue, state, due
 * bucket), written in the same transaction as the change (SQLite has one writer
 * at a time, so a shared counter row costs no concurrency). `due_bucket` is
 * `run_at / COUNT_BUCKET_MS` for a pending row whose bucket was still in the
 * future when the change was written, else 0; a bucket is only read while it is
 * in the future, when every change to its rows was recorded in it. Creating a
 * future bucket row folds the queue's past buckets into 0, so the rows of a
 * queue stay few whatever its depth. `unixepoch()` is fixed for one statement,
 * so the trigger bodies agree on the current bucket.
 */

/** Width of a due bucket (ms); the same as PostgreSQL's (postgres/counts.sql.ts). */
export const COUNT_BUCKET_MS = 10_000;

const NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
const CUR = `(${NOW} / ${COUNT_BUCKET_MS})`;

/** The due bucket of a row in `state` with `runAt` (SQL expressions), by the statement's clock. */
function dueBucket(state: string, runAt: string): string {
  return `CASE WHEN ${state} = 'pending' AND ${runAt} / ${COUNT_BUCKET_MS} > ${CUR} THEN ${runAt} / ${COUNT_BUCKET_MS} ELSE 0 END`;
}

function bucket(row: 'NEW' | 'OLD'): string {
  return dueBucket(`${row}.state`, `${row}.run_at`);
}

function add(row: 'NEW' | 'OLD', delta: 1 | -1): string {
  return `INSERT INTO __alkstore_queue_counts (queue, state, due_bucket, n) VALUES (${row}.queue, ${row}.state, ${bucket(row)}, ${delta})
    ON CONFLICT (queue, state, due_bucket) DO UPDATE SET n = n + ${delta};`;
}

/**
 * The insert trigger counts every new row except those inserted with `precounted = 1`: a plain
 * batch's multi-row statements (queue-ops.ts) set it and count the whole batch with one
 * {@link COUNT_PLAIN_BATCH} in the same transaction, instead of one counter upsert per row. Any
 * other insert (the engine's one-row statements, an application's own SQL) leaves the column NULL
 * and is counted here. Step 17 recreates it on files made before the column existed.
 */
export const INSERT_TRIGGER = `DROP TRIGGER IF EXISTS __alkstore_jobs_count_insert;
CREATE TRIGGER __alkstore_jobs_count_insert AFTER INSERT ON __alkstore_jobs WHEN NEW.precounted IS NULL BEGIN
  ${add('NEW', 1)}
END;`;

/**
 * Counts @n rows a plain batch inserted with `precounted = 1` (queue @queue, pending, run_at
 * @runAt): what the insert trigger would have written for each, as one upsert, bucketed by this
 * statement's clock as every counter change is.
 */
export const COUNT_PLAIN_BATCH = `INSERT INTO __alkstore_queue_counts (queue, state, due_bucket, n)
  VALUES (@queue, 'pending', ${dueBucket("'pending'", '@runAt')}, @n)
  ON CONFLICT (queue, state, due_bucket) DO UPDATE SET n = n + excluded.n`;

/** Step 4 (idempotent): the counters table, its triggers, and counts of the rows already there. */
export const QUEUE_COUNTS_STEP = `
CREATE TABLE IF NOT EXISTS __alkstore_queue_counts (
  queue TEXT NOT NULL,
  state TEXT NOT NULL,
  due_bucket INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (queue, state, due_bucket)
) WITHOUT ROWID;

${INSERT_TRIGGER}
DROP TRIGGER IF EXISTS __alkstore_jobs_count_delete;
CREATE TRIGGER __alkstore_jobs_count_delete AFTER DELETE ON __alkstore_jobs BEGIN
  ${add('OLD', -1)}
END;
DROP TRIGGER IF EXISTS __alkstore_jobs_count_update;
CREATE TRIGGER __alkstore_jobs_count_update AFTER UPDATE OF queue, state, run_at ON __alkstore_jobs
  WHEN OLD.queue IS NOT NEW.queue OR OLD.state IS NOT NEW.state OR (NEW.state = 'pending' AND OLD.run_at IS NOT NEW.run_at)
BEGIN
  ${add('OLD', -1)}
  ${add('NEW', 1)}
END;
DROP TRIGGER IF EXISTS __alkstore_queue_counts_fold;
CREATE TRIGGER __alkstore_queue_counts_fold AFTER INSERT ON __alkstore_queue_counts WHEN NEW.due_bucket > 0 BEGIN
  INSERT INTO __alkstore_queue_counts (queue, state, due_bucket, n)
    SELECT queue, state, 0, sum(n) FROM __alkstore_queue_counts
    WHERE queue = NEW.queue AND state = NEW.state AND due_bucket BETWEEN 1 AND ${CUR}
    GROUP BY queue, state
    ON CONFLICT (queue, state, due_bucket) DO UPDATE SET n = n + excluded.n;
  DELETE FROM __alkstore_queue_counts WHERE queue = NEW.queue AND state = NEW.state AND due_bucket BETWEEN 1 AND ${CUR};
END;

DELETE FROM __alkstore_queue_counts;
INSERT INTO __alkstore_queue_counts (queue, state, due_bucket, n)
  SELECT queue, state, CASE WHEN state = 'pending' AND run_at / ${COUNT_BUCKET_MS} > ${CUR} THEN run_at / ${COUNT_BUCKET_MS} ELSE 0 END AS b, count(*)
  FROM __alkstore_jobs GROUP BY queue, state, b;
`;

/** Counters of @queue at @now: pending, processing, dead, and pending rows in buckets after the current one. */
export const COUNTS = `SELECT
  coalesce(sum(n) FILTER (WHERE state = 'pending'), 0) AS pending,
  coalesce(sum(n) FILTER (WHERE state = 'processing'), 0) AS processing,
  coalesce(sum(n) FILTER (WHERE state = 'dead'), 0) AS dead,
  coalesce(sum(n) FILTER (WHERE state = 'pending' AND due_bucket > @now / ${COUNT_BUCKET_MS}), 0) AS later
  FROM __alkstore_queue_counts WHERE queue = @queue`;

/**
 * Per distinct priority of the queue's pending index (one index probe each):
 * its earliest run_at, and how many of its rows fall due in the rest of the
 * current bucket.
 */
export const PRIORITY_HEADS = `WITH RECURSIVE pr(p) AS (
  SELECT (SELECT priority FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
          WHERE queue = @queue AND state = 'pending' AND blocked = 0 ORDER BY priority DESC LIMIT 1)
  UNION ALL
  SELECT (SELECT j.priority FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
          WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority < pr.p ORDER BY j.priority DESC LIMIT 1)
  FROM pr WHERE pr.p IS NOT NULL)
SELECT
  (SELECT j.run_at FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
   WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority = pr.p ORDER BY j.run_at LIMIT 1) AS first_at,
  (SELECT count(*) FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
   WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority = pr.p
     AND j.run_at > @now AND j.run_at < (@now / ${COUNT_BUCKET_MS} + 1) * ${COUNT_BUCKET_MS}) AS soon
FROM pr WHERE pr.p IS NOT NULL`;

/**
 * A queue's wake sequence: one row per queue in the counters table, state `wake`, due bucket 0, `n`
 * counting the commits that woke the queue's workers (the sums above read only the three job
 * states). A commit that wakes @queue bumps it instead of writing a wake row to `__alkstore_notify`:
 * the row sits next to the queue's `pending` counter, which the same commit's insert changed, so
 * the wake costs no page of its own. Watchers in other processes compare it with the last value
 * they read (notify/listener.ts). The first bump creates the row at 1; it only goes when the
 * counters are rebuilt (a watcher then sees it go back and wakes).
 */
export const BUMP_WAKE_SEQ = `INSERT INTO __alkstore_queue_counts (queue, state, due_bucket, n) VALUES (?, 'wake', 0, 1)
  ON CONFLICT (queue, state, due_bucket) DO UPDATE SET n = n + 1 RETURNING n`;

/** @queue's wake sequence (no row: not yet woken). */
export const WAKE_SEQ = `SELECT n FROM __alkstore_queue_counts WHERE queue = ? AND state = 'wake' AND due_bucket = 0`;
