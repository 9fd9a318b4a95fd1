import { JOB_COLUMNS } from './queue.sql.js';

/**
 * The dashboard's job search and job detail. A search reads one bounded slice
 * of the queue by id (descending, at most @budget rows), filters it, and
 * reports how far the slice reached so the caller can continue below it.
 */
export const SEARCH = `WITH scan AS MATERIALIZED (
    SELECT * FROM __alkstore_jobs
    WHERE queue = @queue AND id < @before AND (@state IS NULL OR state = @state)
    ORDER BY id DESC LIMIT @budget
  ),
  hit AS (
    SELECT ${JOB_COLUMNS} FROM scan
    WHERE (@future = 0 OR run_at > @now)
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
    ORDER BY id DESC LIMIT @limit
  )
  SELECT s.scanned, s.low, h.* FROM (SELECT count(*) AS scanned, min(id) AS low FROM scan) s
  LEFT JOIN hit h ON 1 ORDER BY h.id DESC`;

export const JOB_DETAIL = `SELECT ${JOB_COLUMNS}, CASE WHEN state = 'processing' THEN worker_id END AS worker_id, blocked FROM __alkstore_jobs WHERE id = @id AND queue = @queue`;
