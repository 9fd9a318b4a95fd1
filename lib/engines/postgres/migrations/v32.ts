// Migration 32 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 32 `ordering_next_keys`: `ordering_next` for every key a statement ended jobs of, in one statement
 * instead of one function call (three statements) per key. After jobs `p_done` of the keys
 * (`p_queues[i]`, `p_keys[i]`) left the live states, each key without a live head gets its oldest live
 * job as its head. The caller holds every key's lock (`keyFirst`, `keyTaken`), and the statement here
 * takes a fresh snapshot, so an enqueue of a key that committed before the lock was taken is seen, as
 * in `ordering_next`. A candidate that changed under the statement (it should not: ending a job takes
 * its key's lock) sends every key through `ordering_next` again, which finds the heads already made and
 * looks again for the rest. One wake when any key moved. Returns how many keys got a new head.
 */
export const MIGRATION_32: PostgresMigration = {
  version: 32,
  name: 'ordering promotion of many keys',
  sql: (s: string) => `
CREATE FUNCTION ${s}.ordering_next_keys(p_queues text[], p_keys text[], p_done bigint[], p_channel text, p_wake text)
RETURNS integer LANGUAGE plpgsql AS $fn$
DECLARE
  v_moved integer;
  v_found integer;
  v_key record;
BEGIN
  -- Each key is looked up through its own index range (LATERAL ... LIMIT 1 keeps the planner from
  -- turning the lookups into joins over every live ordered job), and the heads are updated by id.
  WITH nxt AS (
    SELECT n.id
    FROM (SELECT DISTINCT x.q, x.key FROM unnest(p_queues, p_keys) AS x(q, key) WHERE x.key IS NOT NULL) k
    LEFT JOIN LATERAL (
      SELECT 1 AS live FROM ${s}.jobs j
      WHERE j.queue = k.q AND j.ordering_key = k.key AND j.state IN ('pending', 'processing') AND NOT j.blocked
        AND j.id <> ALL (p_done)
      LIMIT 1) h ON true
    CROSS JOIN LATERAL (
      SELECT j.id FROM ${s}.jobs j
      WHERE j.queue = k.q AND j.ordering_key = k.key AND j.state IN ('pending', 'processing') AND j.id <> ALL (p_done)
      ORDER BY j.id LIMIT 1) n
    WHERE h.live IS NULL
  ),
  u AS (
    UPDATE ${s}.jobs j SET blocked = false
    WHERE j.id = ANY (ARRAY(SELECT nxt.id FROM nxt)) AND j.blocked AND j.state = 'pending'
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM nxt) INTO v_moved, v_found;
  IF v_found > v_moved THEN
    FOR v_key IN SELECT DISTINCT x.q, x.key FROM unnest(p_queues, p_keys) AS x(q, key) WHERE x.key IS NOT NULL LOOP
      v_moved := v_moved + ${s}.ordering_next(v_key.q, v_key.key, p_done, p_channel, p_wake);
    END LOOP;
  END IF;
  IF v_moved > 0 THEN
    PERFORM pg_notify(p_channel, p_wake);
  END IF;
  RETURN v_moved;
END
$fn$;
`,
};
