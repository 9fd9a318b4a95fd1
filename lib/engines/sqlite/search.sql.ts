import { JOB_COLUMNS } from './queue.sql.js';

/**
 * The dashboard's job search and job detail. A search reads one bounded slice
 * by id, descending, at most @budget rows: of the whole jobs table, or of the
 * queue's dead jobs. It filters the slice and reports how far it reached, so
 * the caller can continue below it.
 */
const search = (scan: string) => `WITH scan AS MATERIALIZED (${scan}),
  hit AS (
    SELECT ${JOB_COLUMNS}, progress, result, finished_at FROM scan
    WHERE queue = @queue AND (@state IS NULL OR state = @state OR (@state = 'finished' AND state NOT IN ('pending', 'processing')))
      AND (@future = 0 OR run_at > @now)
      AND (@id IS NULL OR id = @id)
      AND (@uniqueKey IS NULL OR unique_key = @uniqueKey)
      AND (@orderingKey IS NULL OR ordering_key = @orderingKey)
      AND (@from IS NULL OR enqueued_at >= @from)
      AND (@to IS NULL OR enqueued_at < @to)
      AND (@error IS NULL OR instr(lower(last_error), @error) > 0)
      AND (@path IS NULL OR CASE @ptype
        WHEN 'null' THEN json_type(payload, @path) = 'null'
        WHEN 'number' THEN json_type(payload, @path) IN ('integer', 'real') AND json_extract(payload, @path) = @pnum
        WHEN 'boolean' THEN json_type(payload, @path) = @ptext
        ELSE json_type(payload, @path) = 'text' AND json_extract(payload, @path) = @ptext END)
      AND (@hpath IS NULL OR (json_type(headers, @hpath) = 'text' AND json_extract(headers, @hpath) = @hvalue))
    ORDER BY id DESC LIMIT @limit
  )
  SELECT s.scanned, s.low, h.* FROM (SELECT count(*) AS scanned, min(id) AS low FROM scan) s
  LEFT JOIN hit h ON 1 ORDER BY h.id DESC`;

/** Every queue's rows, the rowid walked backwards (the outer query keeps the queue's). */
export const SEARCH = search(
  `SELECT *, NULL AS result, NULL AS finished_at FROM __alkstore_jobs WHERE id < @before ORDER BY id DESC LIMIT @budget`,
);

/**
 * For `all` and `finished`: the jobs table and the outcome records (completed, cancelled; step 10),
 * each walked backwards on its rowid, merged by id and cut to the budget. Ids are unique across both
 * (a record keeps its job's id), so every row at or above the slice's lowest id is in it.
 */
export const SEARCH_WITH_OUTCOMES = search(`SELECT * FROM (
    SELECT * FROM (SELECT ${JOB_COLUMNS}, progress, NULL AS result, NULL AS finished_at FROM __alkstore_jobs WHERE id < @before ORDER BY id DESC LIMIT @budget)
    UNION ALL
    SELECT * FROM (SELECT id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at,
        enqueued_at, expires_at, NULL AS claimed_until, NULL AS last_error, NULL AS died_at, headers, unique_key, ordering_key, NULL AS concurrency_key, NULL AS rate_key, progress, result, finished_at
      FROM __alkstore_job_outcomes WHERE id < @before ORDER BY id DESC LIMIT @budget)
  ) ORDER BY id DESC LIMIT @budget`);

/** The queue's dead jobs: the dead index, (queue, id), so a small dead set in a large table is read alone. */
export const SEARCH_DEAD =
  search(`SELECT *, NULL AS result, NULL AS finished_at FROM __alkstore_jobs INDEXED BY __alkstore_jobs_dead
    WHERE queue = @queue AND state = 'dead' AND id < @before
    ORDER BY id DESC LIMIT @budget`);

export const JOB_DETAIL = `SELECT ${JOB_COLUMNS}, CASE WHEN state = 'processing' THEN worker_id END AS worker_id, blocked FROM __alkstore_jobs WHERE id = @id AND queue = @queue`;
