// Migration 16 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';
import { NOW_MS } from '../schema-sql.js';
import { COUNT_BUCKET_MS } from '../counts.sql.js';
import { pgLiteral } from './v1-3.js';

/** The newest fold's `col` (`floor` or `floor_xip`) of `queue` (an SQL text expression), NULL before any. */
function newestFold(s: string, queue: string, col: 'floor' | 'floor_xip'): string {
  return `(SELECT f.${col} FROM ${s}.queue_counts f WHERE f.queue = ${queue} AND f.floor IS NOT NULL ORDER BY f.floor DESC LIMIT 1)`;
}

/**
 * The counter rows of `queue` still to be read (a row source of `cols` from alias `k`): those the
 * newest fold could not see, written by a transaction at or above its snapshot's `xmax` (the
 * `floor`) or by one still running when it was taken (`floor_xip`). Every other row of the queue
 * was folded into that fold's rows (and is dead, or gone once vacuumed). An index range and one
 * probe per listed transaction, a union rather than an `OR`, so that none turns into a filter over
 * every entry of the queue. A migration 15 fold recorded its snapshot's `xmin` and no list: the
 * same read is a superset, exact.
 */
function unfolded(s: string, queue: string, cols: string): string {
  const floor = `coalesce(${newestFold(s, queue, 'floor')}, '0'::xid8)`;
  return `(SELECT ${cols} FROM ${s}.queue_counts k WHERE k.queue = ${queue} AND k.xid >= ${floor}
    UNION ALL
    SELECT ${cols} FROM ${s}.queue_counts k WHERE k.queue = ${queue} AND k.xid = ANY(ARRAY(SELECT x.id FROM unnest(${newestFold(s, queue, 'floor_xip')}) AS x(id) WHERE x.id < ${floor})))`;
}

/**
 * `stats` of one queue (`q`): counters summed, plus a walk of the distinct priorities of its pending
 * index (one index probe each) for the oldest ready claimable job and the rows due in the rest of the
 * current bucket. Jobs blocked behind their ordering key's head are not in that index: they count in
 * `pending` (and in `scheduled` when due in a later bucket), not in the age.
 */
function statsQuery(s: string, q: string): string {
  const jobs = `${s}.jobs`;
  return `WITH RECURSIVE t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
  c AS MATERIALIZED (
    SELECT coalesce(sum(k.n) FILTER (WHERE k.state = 'pending'), 0) AS pending,
           coalesce(sum(k.n) FILTER (WHERE k.state = 'processing'), 0) AS processing,
           coalesce(sum(k.n) FILTER (WHERE k.state = 'dead'), 0) AS dead,
           coalesce(sum(k.n) FILTER (WHERE k.state = 'pending' AND k.due_bucket > (SELECT ms FROM t) / ${COUNT_BUCKET_MS}), 0) AS later
    FROM ${unfolded(s, q, 'k.state, k.n, k.due_bucket')} k),
  pr(p) AS (
    (SELECT j.priority FROM ${jobs} j WHERE j.queue = ${q} AND j.state = 'pending' AND NOT j.blocked ORDER BY j.priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT j.priority FROM ${jobs} j WHERE j.queue = ${q} AND j.state = 'pending' AND NOT j.blocked AND j.priority < pr.p ORDER BY j.priority DESC LIMIT 1)
    FROM pr WHERE pr.p IS NOT NULL),
  heads AS (
    SELECT (SELECT j.run_at FROM ${jobs} j WHERE j.queue = ${q} AND j.state = 'pending' AND NOT j.blocked AND j.priority = pr.p ORDER BY j.run_at LIMIT 1) AS first_at,
           (SELECT count(*) FROM ${jobs} j WHERE j.queue = ${q} AND j.state = 'pending' AND NOT j.blocked AND j.priority = pr.p
              AND j.run_at > t.ms AND j.run_at < (t.ms / ${COUNT_BUCKET_MS} + 1) * ${COUNT_BUCKET_MS}) AS soon
    FROM pr, t WHERE pr.p IS NOT NULL)
  SELECT c.pending::bigint, c.processing::bigint, c.dead::bigint, (c.later + coalesce((SELECT sum(h.soon) FROM heads h), 0))::bigint,
         coalesce(t.ms - (SELECT min(h.first_at) FROM heads h WHERE h.first_at <= t.ms), 0)::bigint
  FROM c, t`;
}

/**
 * 16 a fold's floor skips an idle transaction (issue #30, B12). Migration 15's floor was the oldest
 * transaction running at the fold's snapshot, so one session left idle in transaction after a write
 * (it holds a transaction id) kept the floor where it was: every delta folded after it stayed inside
 * the range `stats()` and the next fold read, dead but read: a read grew with every delta written
 * while that session stayed open. A fold now records its snapshot's `xmax` as the floor and the transactions
 * still running at it (`floor_xip`, its own included: when the fold runs inside a statement that
 * already wrote, its own deltas may be ones it cannot see); a row it could not see is one of those.
 * A late writer's rows are still read (its id is in the list) while the rows folded since are not.
 * And `stats()` becomes the function `queue_stats`, run with JIT off: at 10 million queued jobs the
 * planner's estimate of the statement passed `jit_above_cost`, and compiling it took 20 of its 22 ms
 * on every call (DEPTH). A function's own `SET` lasts only while it runs: no session state is left.
 */
export const MIGRATION_16: PostgresMigration = {
  version: 16,
  name: 'fold floors skip idle transactions, stats without JIT',
  sql: (s: string) => {
    const cur = `floor(extract(epoch from clock_timestamp()) * 1000)::bigint / ${COUNT_BUCKET_MS}`;
    const lock = `hashtextextended(${pgLiteral(s)} || '/counts/' || p_queue, 7)`;
    return `
ALTER TABLE ${s}.queue_counts ADD COLUMN floor_xip xid8[];

-- As migration 15's fold, with the floor from the snapshot's xmax and the list of the transactions
-- running at it: every delta the DELETEs cannot see was written by one of them or at or above xmax.
-- Two DELETEs (the rows at or above the last floor; those of the last list's transactions below it,
-- one index probe each), so that neither reads every entry of the queue.
CREATE OR REPLACE FUNCTION ${s}.fold_queue_counts(p_queue text) RETURNS void LANGUAGE sql AS $fn$
  WITH lk AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(${lock}) AS ok),
  fl AS MATERIALIZED (
    SELECT coalesce(${newestFold(s, 'p_queue', 'floor')}, '0'::xid8) AS f, ${newestFold(s, 'p_queue', 'floor_xip')} AS fx,
      pg_snapshot_xmax(ss.s) AS nf, array_append(ARRAY(SELECT pg_snapshot_xip(ss.s)), pg_current_xact_id()) AS nx
    FROM lk, (SELECT pg_current_snapshot() AS s) ss WHERE lk.ok),
  above AS (DELETE FROM ${s}.queue_counts c USING fl WHERE c.queue = p_queue AND c.xid >= fl.f RETURNING c.state, c.due_bucket, c.n),
  listed AS (DELETE FROM ${s}.queue_counts c WHERE c.queue = p_queue AND c.xid = ANY(ARRAY(SELECT x.id FROM fl, unnest(fl.fx) AS x(id) WHERE x.id < fl.f)) RETURNING c.state, c.due_bucket, c.n),
  gone AS (SELECT * FROM above UNION ALL SELECT * FROM listed)
  INSERT INTO ${s}.queue_counts (queue, state, due_bucket, n, floor, floor_xip)
  SELECT p_queue, g.state, CASE WHEN g.due_bucket > ${cur} THEN g.due_bucket ELSE 0 END AS b, sum(g.n), (SELECT nf FROM fl), (SELECT nx FROM fl)
  FROM gone g GROUP BY g.state, b HAVING sum(g.n) <> 0
  UNION ALL SELECT p_queue, 'pending', 0, 0, fl.nf, fl.nx FROM fl
$fn$;

CREATE FUNCTION ${s}.queue_stats(p_queue text)
RETURNS TABLE (pending bigint, processing bigint, dead bigint, scheduled bigint, oldest bigint)
LANGUAGE plpgsql SET jit = off AS $fn$
BEGIN
  RETURN QUERY ${statsQuery(s, 'p_queue')};
END
$fn$;
`;
  },
};
