/**
 * Per-queue job counters for `stats()` in constant time.
 *
 * Every statement that inserts or deletes jobs, or changes their state or
 * run_at, also appends one delta row per (queue, state, due bucket) it changed,
 * in the same statement (migration 7; migration 4 did it with statement
 * triggers, which cost about four times as much per statement): counts are
 * exact in every snapshot, and concurrent writers never wait on a shared
 * counter row (each appends its own rows). About one statement in 64 folds a
 * queue's committed deltas into one row per key, skipping rows another fold
 * holds, so the rows of a queue stay few whatever its depth.
 *
 * `due_bucket` is `run_at / COUNT_BUCKET_MS` for a pending row whose bucket was
 * still in the future when the change was written, else 0. A bucket is only
 * ever read while it is in the future, when every change to its rows was
 * recorded in it; past buckets fold into 0. `scheduled` is then the sum of the
 * future buckets plus an index range count of the rows due in the rest of the
 * current bucket. The clock of a delta is any reading taken in its transaction:
 * a reader only reads buckets later than its own clock, which is later than
 * every clock read before the commits it sees.
 */

/** Width of a due bucket (ms). */
export const COUNT_BUCKET_MS = 10_000;

/** One statement in this many folds the deltas of the queues it touched. */
const FOLD_ONE_IN = 64;

function bucketOf(state: string, runAt: string, cur: string): string {
  return `CASE WHEN ${state} = 'pending' AND ${runAt} / ${COUNT_BUCKET_MS} > ${cur} THEN ${runAt} / ${COUNT_BUCKET_MS} ELSE 0 END`;
}

/** Probability that a statement folds the counters of the queues it changed. */
const FOLD_P = 1 / FOLD_ONE_IN;

/**
 * The due bucket of a row image (`state`, `runAt` SQL expressions) at the
 * clock `nowMs` (epoch ms): the formula of migration 4's triggers.
 */
export function dueBucket(state: string, runAt: string, nowMs: string): string {
  return `CASE WHEN ${state} = 'pending' AND ${runAt} / ${COUNT_BUCKET_MS} > ${nowMs} / ${COUNT_BUCKET_MS} THEN ${runAt} / ${COUNT_BUCKET_MS} ELSE 0 END`;
}

/**
 * An `INSERT` of counter deltas for a data-modifying CTE: `select` yields
 * (queue, state, due_bucket, n) rows, none with n = 0.
 */
export function countDeltas(q: string, select: string): string {
  return `INSERT INTO ${q}.queue_counts (queue, state, due_bucket, n) ${select}`;
}

/**
 * A scalar subquery that, in about one evaluation in 64, folds the counters
 * of the queues `queues` yields (a SELECT of one text column; none: nothing).
 * A statement must reference it (e.g. as an output column) for it to run.
 */
export function foldSometimes(q: string, queues: string): string {
  return `(SELECT count(*) FROM (SELECT ${q}.fold_queue_counts(f.queue) FROM (${queues}) AS f(queue) WHERE random() < ${FOLD_P}) AS x)`;
}

/** The same for plpgsql: folds `queue` in about one call in 64. */
export function foldSometimesStmt(q: string, queue: string): string {
  return `IF random() < ${FOLD_P} THEN PERFORM ${q}.fold_queue_counts(${queue}); END IF;`;
}

/** Migration 4: the counters table, fold function, triggers, and counts of the rows already there. */
export function queueCountsMigrationSql(s: string): string {
  const cur = `floor(extract(epoch from clock_timestamp()) * 1000)::bigint / ${COUNT_BUCKET_MS}`;
  const fold = (rows: string) => `IF random() < ${1 / FOLD_ONE_IN} THEN
    PERFORM ${s}.fold_queue_counts(d.queue) FROM (SELECT DISTINCT queue FROM ${rows}) d;
  END IF;`;
  return `
CREATE TABLE ${s}.queue_counts (
  queue text NOT NULL,
  state text NOT NULL,
  due_bucket bigint NOT NULL,
  n bigint NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 5000);
CREATE INDEX queue_counts_queue_idx ON ${s}.queue_counts (queue);

-- Folds the committed deltas of one queue into one row per (state, bucket); past buckets become 0.
-- Rows locked by a concurrent fold are skipped, so folds never wait on each other.
CREATE FUNCTION ${s}.fold_queue_counts(p_queue text) RETURNS void LANGUAGE sql AS $fn$
  WITH taken AS (SELECT c.ctid AS tid FROM ${s}.queue_counts c WHERE c.queue = p_queue FOR UPDATE SKIP LOCKED),
  gone AS (DELETE FROM ${s}.queue_counts c USING taken t WHERE c.ctid = t.tid RETURNING c.state, c.due_bucket, c.n)
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n)
  SELECT p_queue, g.state, CASE WHEN g.due_bucket > ${cur} THEN g.due_bucket ELSE 0 END AS b, sum(g.n)
  FROM gone g GROUP BY g.state, b HAVING sum(g.n) <> 0
$fn$;

CREATE FUNCTION ${s}.jobs_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  v_cur bigint := ${cur};
BEGIN
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n)
  SELECT queue, state, ${bucketOf('state', 'run_at', 'v_cur')} AS b, count(*) FROM new_jobs GROUP BY queue, state, b;
  ${fold('new_jobs')}
  RETURN NULL;
END
$fn$;

CREATE FUNCTION ${s}.jobs_counts_update() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  v_cur bigint := ${cur};
BEGIN
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n)
  SELECT x.queue, x.state, x.b, sum(x.n) FROM (
    SELECT queue, state, ${bucketOf('state', 'run_at', 'v_cur')} AS b, -1 AS n FROM old_jobs
    UNION ALL
    SELECT queue, state, ${bucketOf('state', 'run_at', 'v_cur')} AS b, 1 AS n FROM new_jobs
  ) x GROUP BY x.queue, x.state, x.b HAVING sum(x.n) <> 0;
  ${fold('new_jobs')}
  RETURN NULL;
END
$fn$;

CREATE FUNCTION ${s}.jobs_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  v_cur bigint := ${cur};
BEGIN
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n)
  SELECT queue, state, ${bucketOf('state', 'run_at', 'v_cur')} AS b, -count(*) FROM old_jobs GROUP BY queue, state, b;
  ${fold('old_jobs')}
  RETURN NULL;
END
$fn$;

-- No writer may change jobs between the snapshot of the initial counts and the triggers going live.
LOCK TABLE ${s}.jobs IN SHARE ROW EXCLUSIVE MODE;
CREATE TRIGGER jobs_counts_insert AFTER INSERT ON ${s}.jobs REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.jobs_counts_insert();
CREATE TRIGGER jobs_counts_update AFTER UPDATE ON ${s}.jobs REFERENCING OLD TABLE AS old_jobs NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.jobs_counts_update();
CREATE TRIGGER jobs_counts_delete AFTER DELETE ON ${s}.jobs REFERENCING OLD TABLE AS old_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.jobs_counts_delete();
INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n)
SELECT queue, state, ${bucketOf('state', 'run_at', cur)} AS b, count(*) FROM ${s}.jobs GROUP BY queue, state, b;
`;
}

/**
 * `stats` of one queue ($1): the engine function `queue_stats` (migration 16), which runs with JIT
 * off. At 10 million queued jobs the planner's estimate of the statement passed PostgreSQL's
 * `jit_above_cost`, and compiling it took 20 of its 22 ms, on every call.
 */
export function queueStatsSql(s: string): string {
  return `SELECT q.pending, q.processing, q.dead, q.scheduled, q.oldest FROM ${s}.queue_stats($1::text) q`;
}
