// Migration 15 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';
import { COUNT_BUCKET_MS, dueBucket } from '../counts.sql.js';
import { pgLiteral } from './v1-3.js';

/** Migration 15's read of the newest floor (its own copy: the SQL a released migration ran never changes; migration 16 reads further). */
function floorOf15(s: string, queue: string): string {
  return `coalesce((SELECT f.floor FROM ${s}.queue_counts f WHERE f.queue = ${queue} AND f.floor IS NOT NULL ORDER BY f.floor DESC LIMIT 1), '0'::xid8)`;
}

/**
 * 15 counters read from the last fold on (issue #30, B12). Every counter delta row records the
 * transaction that wrote it (`xid`), and a fold's rows record a floor (`floor`): the oldest
 * transaction still running when the fold took its snapshot. The fold deletes every delta its
 * snapshot sees, so every row it did not delete was written by a transaction at or above that
 * floor, and `stats()` and the next fold read only the rows from the newest floor they see on
 * (`floorOf15`) instead of every index entry of the queue: while an old snapshot holds the
 * xmin horizon, the deltas folded since stay behind as dead rows, and a read of all of them cost
 * 26 ms at 290k (B12 after 5 minutes). Folds of one queue take turns (a transaction-scoped
 * advisory lock; a fold that finds it held skips), and so does the repair `recount_queue_counts`,
 * which waits for it, so a fold never leaves a delta it saw behind.
 */
export const MIGRATION_15: PostgresMigration = {
  version: 15,
  name: 'counters from the last fold',
  sql: (s: string) => {
    const cur = `floor(extract(epoch from clock_timestamp()) * 1000)::bigint / ${COUNT_BUCKET_MS}`;
    const lock = `hashtextextended(${pgLiteral(s)} || '/counts/' || p_queue, 7)`;
    const jobs = `${s}.jobs`;
    const now = 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint';
    return `
ALTER TABLE ${s}.queue_counts ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id(), ADD COLUMN floor xid8;
DROP INDEX ${s}.queue_counts_queue_idx;
CREATE INDEX queue_counts_queue_idx ON ${s}.queue_counts (queue, xid);
CREATE INDEX queue_counts_floor_idx ON ${s}.queue_counts (queue, floor DESC) WHERE floor IS NOT NULL;

-- Folds the deltas of one queue into one row per (state, bucket), past buckets into 0, plus a marker
-- row: all of them carry the floor, the oldest transaction running at this statement's snapshot (every
-- delta the DELETE cannot see was written at or above it). One fold of a queue at a time: a fold that
-- finds another running skips. One that committed after this snapshot was taken has deleted some rows
-- this one sees (they are skipped) and left rows this one cannot see, all written at or above this floor.
CREATE OR REPLACE FUNCTION ${s}.fold_queue_counts(p_queue text) RETURNS void LANGUAGE sql AS $fn$
  WITH lk AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(${lock}) AS ok),
  fl AS MATERIALIZED (SELECT ${floorOf15(s, 'p_queue')} AS f, pg_snapshot_xmin(pg_current_snapshot()) AS nf FROM lk WHERE lk.ok),
  gone AS (DELETE FROM ${s}.queue_counts c USING fl WHERE c.queue = p_queue AND c.xid >= fl.f RETURNING c.state, c.due_bucket, c.n)
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n, floor)
  SELECT p_queue, g.state, CASE WHEN g.due_bucket > ${cur} THEN g.due_bucket ELSE 0 END AS b, sum(g.n), (SELECT nf FROM fl)
  FROM gone g GROUP BY g.state, b HAVING sum(g.n) <> 0
  UNION ALL SELECT p_queue, 'pending', 0, 0, fl.nf FROM fl
$fn$;

-- The repair (migration 6's): it now waits for a running fold of the queue, and folds wait for it.
CREATE OR REPLACE FUNCTION ${s}.recount_queue_counts(p_queue text) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(${lock});
  LOCK TABLE ${jobs} IN SHARE MODE;
  v_now := ${now};
  DELETE FROM ${s}.queue_counts WHERE queue = p_queue;
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n)
  SELECT queue, state, ${dueBucket('state', 'run_at', 'v_now')} AS b, count(*)
  FROM ${jobs} WHERE queue = p_queue GROUP BY queue, state, b;
END
$fn$;
`;
  },
};
