// Migration 16 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';
import { COUNT_BUCKET_MS, newestFoldSql } from '../counts.sql.js';
import { pgLiteral } from './v1-3.js';

/**
 * 16 a fold's floor skips an idle transaction (issue #30, B12). Migration 15's floor was the oldest
 * transaction running at the fold's snapshot, so one session left idle in transaction after a write
 * (it holds a transaction id) kept the floor where it was: every delta folded after it stayed inside
 * the range `stats()` and the next fold read, dead but read: a read grew with every delta written
 * while that session stayed open. A fold now records its snapshot's `xmax` as the floor and the transactions
 * still running at it (`floor_xip`, its own included: when the fold runs inside a statement that
 * already wrote, its own deltas may be ones it cannot see); a row it could not see is one of those.
 * A late writer's rows are still read (its id is in the list) while the rows folded since are not.
 */
export const MIGRATION_16: PostgresMigration = {
  version: 16,
  name: 'fold floors skip idle transactions',
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
    SELECT coalesce(${newestFoldSql(s, 'p_queue', 'floor')}, '0'::xid8) AS f, ${newestFoldSql(s, 'p_queue', 'floor_xip')} AS fx,
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
`;
  },
};
