import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';
import { jobColumns } from './queue.sql.js';

/**
 * The dashboard's job search and job detail. A search reads one bounded slice
 * by id, descending, at most `budget` rows: of the whole jobs table (the
 * primary key walked backwards), or of the queue's dead jobs (the dead index).
 * It filters the slice and reports how far it reached, so the caller can
 * continue below it.
 */
export function searchSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  const outcomes = `${s.q}.job_outcomes`;
  // Every scan yields the job columns plus the outcome fields (null on the jobs table's rows but progress).
  const search = (name: string, scan: string) =>
    s.def(
      name,
      `WITH scan AS MATERIALIZED (${scan}),
       hit AS (
         SELECT ${jobColumns('j')}, j.progress::text AS progress, j.result::text AS result, j.finished_at FROM scan j
         WHERE j.queue = $1::text AND ($3::text IS NULL OR j.state = $3::text OR ($3::text = 'finished' AND j.state NOT IN ('pending', 'processing')))
           AND (NOT $5::boolean OR j.run_at > ${NOW_MS})
           AND ($6::bigint IS NULL OR j.id = $6::bigint)
           AND ($7::text IS NULL OR j.unique_key = $7::text)
           AND ($8::text IS NULL OR j.ordering_key = $8::text)
           AND ($9::bigint IS NULL OR j.enqueued_at >= $9::bigint)
           AND ($10::bigint IS NULL OR j.enqueued_at < $10::bigint)
           AND ($11::text IS NULL OR strpos(lower(j.last_error), $11::text) > 0)
           AND ($12::text[] IS NULL OR CASE $13::text
             WHEN 'null' THEN json_typeof(j.payload #> $12::text[]) = 'null'
             WHEN 'number' THEN CASE WHEN json_typeof(j.payload #> $12::text[]) = 'number' THEN (j.payload #>> $12::text[])::numeric = $15::numeric ELSE false END
             WHEN 'boolean' THEN json_typeof(j.payload #> $12::text[]) = 'boolean' AND (j.payload #>> $12::text[]) = $14::text
             ELSE json_typeof(j.payload #> $12::text[]) = 'string' AND (j.payload #>> $12::text[]) = $14::text END)
           AND ($17::text IS NULL OR (j.headers ->> $17::text) = $18::text)
         ORDER BY j.id DESC LIMIT $16::int
       )
       SELECT s.scanned, s.low, h.* FROM (SELECT count(*) AS scanned, min(id) AS low FROM scan) s
       LEFT JOIN hit h ON true ORDER BY h.id DESC`,
    );
  return {
    /**
     * $1 queue, $2 ids below, $3 row state or null, $4 budget, $5 future run time only,
     * $6 id, $7 unique key, $8 ordering key, $9 enqueued from, $10 enqueued to, $11 error needle (lower case),
     * $12 payload path, $13 payload type, $14 payload text, $15 payload number, $16 limit,
     * $17 header name, $18 header value.
     */
    search: search(
      'a_search_jobs',
      // The primary key walked backwards, every queue's rows: a plan no statistics can turn into a sort of the queue.
      `SELECT j.*, NULL::json AS result, NULL::bigint AS finished_at FROM ${jobs} j WHERE j.id < $2::bigint ORDER BY j.id DESC LIMIT $4::int`,
    ),
    /**
     * The same parameters, for `all` and `finished`: the jobs table and the outcome records
     * (completed, cancelled; migration 10), each walked backwards on its primary key, merged by id
     * and cut to the budget. Ids are unique across both (a record keeps its job's id), so every row
     * at or above the slice's lowest id is in the slice, and the cursor continues below it.
     */
    searchWithOutcomes: search(
      'a_search_jobs_outcomes',
      `SELECT * FROM (
         (SELECT j.id, j.queue, j.state, j.payload, j.priority, j.attempts, j.max_attempts, j.visibility_timeout_ms, j.backoff_base_ms,
            j.dead_letter_retention_ms, j.run_at, j.enqueued_at, j.expires_at, j.claimed_until, j.claim_token, j.last_error, j.died_at,
            j.headers, j.unique_key, j.ordering_key, j.concurrency_key, j.rate_key, j.progress, NULL::json AS result, NULL::bigint AS finished_at
          FROM ${jobs} j WHERE j.id < $2::bigint ORDER BY j.id DESC LIMIT $4::int)
         UNION ALL
         (SELECT o.id, o.queue, o.state, o.payload, o.priority, o.attempts, o.max_attempts, o.visibility_timeout_ms, o.backoff_base_ms,
            o.dead_letter_retention_ms, o.run_at, o.enqueued_at, o.expires_at, NULL::bigint, NULL::uuid, NULL::text, NULL::bigint,
            o.headers, o.unique_key, o.ordering_key, NULL::text, NULL::text, o.progress, o.result, o.finished_at
          FROM ${outcomes} o WHERE o.id < $2::bigint ORDER BY o.id DESC LIMIT $4::int)
       ) m ORDER BY m.id DESC LIMIT $4::int`,
    ),
    /** The same parameters; the queue's dead jobs through the dead index (queue, id), so a small dead set in a large table is read alone. */
    searchDead: search(
      'a_search_jobs_dead',
      `SELECT j.*, NULL::json AS result, NULL::bigint AS finished_at FROM ${jobs} j WHERE j.queue = $1::text AND j.state = 'dead' AND j.id < $2::bigint ORDER BY j.id DESC LIMIT $4::int`,
    ),
    /** $1 queue, $2 id. */
    detail: s.def(
      'a_job_detail',
      `SELECT ${jobColumns('j')}, CASE WHEN j.state = 'processing' THEN j.worker_id END AS worker_id, j.blocked FROM ${jobs} j WHERE j.id = $2::bigint AND j.queue = $1::text`,
    ),
  } satisfies Record<string, Sql>;
}

export type SearchSql = ReturnType<typeof searchSql>;
