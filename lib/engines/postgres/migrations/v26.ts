// Migration 26 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/** Job ids one partition of `job_outcomes` covers unless `partition_widths` says otherwise. */
export const OUTCOME_PARTITION_IDS = 1_000_000;

/**
 * Outcome records not yet past their retention (or kept forever) a range may still hold when it is
 * dropped: they are moved to the default partition first (one statement); with more, the range waits.
 * It also bounds what a round reads to learn it: at most this many index entries per queue and range.
 */
export const OUTCOME_SURVIVORS_MOVED = 1_000;

/**
 * 26 `job_outcomes` partitioned: the table becomes a declaratively partitioned one, by ranges of job
 * id (issued in order), so retention drops whole ranges of outcome records instead of deleting rows.
 *
 * The existing table is attached as it is (no copy) as the range of every id below the next multiple
 * of the width above the ids issued (`job_outcomes_legacy`): that attach reads the table once to check
 * its ids, under the migration's lock. Its rows leave by the queue sweep's DELETE as before. A new,
 * empty DEFAULT partition takes the outcome of a job whose range was already dropped (a job that ran
 * long after the others of its range); it stays small, so making a range, which reads the default
 * partition to check that none of its rows fall in the new range, stays cheap.
 *
 * `retire_outcome_partitions()` is the retention runner's step: it makes the ranges for the next two
 * widths of ids above the ids issued, then drops, oldest first, each range whose ids were all issued,
 * none of whose jobs is still pending or processing (its outcome would land in the default partition),
 * and whose records are all past their `keep_until` (a record kept forever, or not yet due, is a survivor):
 * with no survivor the partition is dropped; with at most {@link OUTCOME_SURVIVORS_MOVED}, and at most a
 * tenth of the range's rows (from its statistics), it is detached, its survivors are inserted again
 * (they land in the default partition) and it is dropped; else the range waits.
 * Survivors are counted by index (one seek per queue of the range, and a partial index of the records
 * kept forever that each range gets), first without a lock and again under a short lock of the table,
 * taken only when there is a range to make or to drop and given up after 200 ms (the next round tries
 * again). It returns the rows it retired, from the statistics of each dropped partition (an estimate).
 */
export const MIGRATION_26: PostgresMigration = {
  version: 26,
  name: 'job outcomes partitioned by id range',
  sql: (s: string) => {
    const seq = `pg_get_serial_sequence('${s.replace(/'/g, "''")}.jobs', 'id')`;
    return `
-- first_id: where ranges may start (the table kept from before its partitioning holds the ids below).
ALTER TABLE ${s}.partition_widths ADD COLUMN first_id bigint NOT NULL DEFAULT 0;
INSERT INTO ${s}.partition_widths (parent, width) VALUES ('job_outcomes', ${OUTCOME_PARTITION_IDS});
ALTER TABLE ${s}.job_outcomes RENAME TO job_outcomes_legacy;
ALTER INDEX ${s}.job_outcomes_pkey RENAME TO job_outcomes_legacy_pkey;
ALTER INDEX ${s}.job_outcomes_keep_idx RENAME TO job_outcomes_legacy_keep_idx;
CREATE TABLE ${s}.job_outcomes (
  id bigint NOT NULL,
  queue text NOT NULL,
  state text NOT NULL CONSTRAINT job_outcomes_state_check CHECK (state IN ('completed', 'cancelled')),
  payload json NOT NULL,
  priority integer NOT NULL,
  attempts integer NOT NULL,
  max_attempts integer NOT NULL,
  visibility_timeout_ms bigint NOT NULL,
  backoff_base_ms bigint NOT NULL,
  dead_letter_retention_ms bigint,
  run_at bigint NOT NULL,
  enqueued_at bigint NOT NULL,
  expires_at bigint,
  headers json,
  unique_key text,
  ordering_key text,
  result json,
  progress json,
  finished_at bigint NOT NULL,
  keep_until bigint,
  PRIMARY KEY (id)
) PARTITION BY RANGE (id);
CREATE INDEX job_outcomes_keep_idx ON ${s}.job_outcomes (queue, keep_until) WHERE keep_until IS NOT NULL;
CREATE TABLE ${s}.job_outcomes_default PARTITION OF ${s}.job_outcomes DEFAULT;
DO $mig$
DECLARE
  w bigint := ${OUTCOME_PARTITION_IDS};
  issued bigint;
BEGIN
  EXECUTE format('SELECT last_value FROM %s', ${seq}) INTO issued;
  -- Every id the table holds, even past the sequence (a database restored without it): one seek.
  issued := greatest(issued, coalesce((SELECT max(id) FROM ${s}.job_outcomes_legacy), 0));
  UPDATE ${s}.partition_widths SET first_id = (issued / w + 1) * w WHERE parent = 'job_outcomes';
  EXECUTE format('ALTER TABLE ${s}.job_outcomes ATTACH PARTITION ${s}.job_outcomes_legacy FOR VALUES FROM (MINVALUE) TO (%s)',
    (issued / w + 1) * w);
END
$mig$;

CREATE FUNCTION ${s}.retire_outcome_partitions() RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  w bigint;
  issued bigint;
  top bigint;
  now_ms bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint;
  p record;
  part text;
  due bigint[] := '{}';
  left_n bigint;
  movable bigint;
  hi_ bigint;
  floor_id bigint;
  est real;
  n bigint := 0;
BEGIN
  SELECT width, first_id INTO w, floor_id FROM ${s}.partition_widths WHERE parent = 'job_outcomes';
  EXECUTE format('SELECT last_value FROM %s', ${seq}) INTO issued;
  UPDATE ${s}.range_partitions SET full_at = now_ms
  WHERE parent = 'job_outcomes' AND full_at IS NULL AND hi <= issued + 1;
  SELECT max(hi) INTO top FROM ${s}.range_partitions WHERE parent = 'job_outcomes';
  FOR p IN SELECT lo, hi FROM ${s}.range_partitions WHERE parent = 'job_outcomes' AND full_at IS NOT NULL ORDER BY lo LOOP
    part := 'job_outcomes_p' || p.lo;
    -- Survivors are moved only when they are few, and a tenth of the range at most (else it waits for them).
    SELECT c.reltuples INTO est FROM pg_class c WHERE c.oid = format('${s}.%I', part)::regclass;
    movable := least(${OUTCOME_SURVIVORS_MOVED}, floor(greatest(coalesce(est, 0), 0) / 10)::bigint);
    CONTINUE WHEN ${s}.outcome_survivors(part, now_ms, movable) > movable;
    -- A job of the range still to end would write its outcome in the default partition: the range waits for it.
    CONTINUE WHEN EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id >= p.lo AND j.id < p.hi AND j.state <> 'dead');
    due := due || p.lo;
  END LOOP;
  -- Nothing to make and nothing to drop: no lock at all.
  IF top IS NOT NULL AND top >= issued + 2 * w AND cardinality(due) = 0 THEN
    RETURN 0;
  END IF;
  -- A short wait at most: outcome writes queue behind a waiting lock.
  PERFORM set_config('lock_timeout', '200', true);
  BEGIN
    -- Parent first, as every insert locks it before its partition: no cycle with them.
    LOCK TABLE ${s}.job_outcomes IN ACCESS EXCLUSIVE MODE;
  EXCEPTION WHEN lock_not_available THEN
    RETURN 0;
  END;
  EXECUTE format('SELECT last_value FROM %s', ${seq}) INTO issued;
  IF top IS NULL OR top <= issued THEN
    -- Ids up to the last issued may already sit in the default partition: start above them.
    top := greatest((issued / w + 1) * w, floor_id);
  END IF;
  WHILE top < issued + 2 * w LOOP
    part := 'job_outcomes_p' || top;
    EXECUTE format('CREATE TABLE ${s}.%I PARTITION OF ${s}.job_outcomes FOR VALUES FROM (%s) TO (%s)', part, top, top + w);
    -- The records kept forever, so a round counts them by index.
    EXECUTE format('CREATE INDEX %I ON ${s}.%I (id) WHERE keep_until IS NULL', part || '_forever_idx', part);
    INSERT INTO ${s}.range_partitions (parent, lo, hi) VALUES ('job_outcomes', top, top + w);
    top := top + w;
  END LOOP;
  FOREACH top IN ARRAY due LOOP
    part := 'job_outcomes_p' || top;
    -- Counted again under the lock: a record written since then may have joined them.
    SELECT r.hi INTO hi_ FROM ${s}.range_partitions r WHERE r.parent = 'job_outcomes' AND r.lo = top;
    CONTINUE WHEN EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id >= top AND j.id < hi_ AND j.state <> 'dead');
    SELECT c.reltuples INTO est FROM pg_class c WHERE c.oid = format('${s}.%I', part)::regclass;
    movable := least(${OUTCOME_SURVIVORS_MOVED}, floor(greatest(coalesce(est, 0), 0) / 10)::bigint);
    left_n := ${s}.outcome_survivors(part, now_ms, movable);
    CONTINUE WHEN left_n > movable;
    IF left_n > 0 THEN
      EXECUTE format('ALTER TABLE ${s}.job_outcomes DETACH PARTITION ${s}.%I', part);
      EXECUTE format('INSERT INTO ${s}.job_outcomes SELECT * FROM ${s}.%I WHERE keep_until IS NULL OR keep_until > %s', part, now_ms);
    END IF;
    n := n + greatest(greatest(coalesce(est, 0), 0)::bigint - left_n, 0);
    EXECUTE format('DROP TABLE ${s}.%I', part);
    DELETE FROM ${s}.range_partitions WHERE parent = 'job_outcomes' AND lo = top;
  END LOOP;
  RETURN n;
END
$fn$;

-- Records of range partition $1 not yet past their keep_until at $2 (kept forever included), counted up
-- to $3 + 1 (per queue, then summed): one seek per queue in the keep index and at most that many entries
-- after it, one range of the forever index.
CREATE FUNCTION ${s}.outcome_survivors(p_part text, p_now bigint, p_limit bigint) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  k bigint;
BEGIN
  EXECUTE format('WITH RECURSIVE r AS (
      SELECT (SELECT t.queue FROM ${s}.%1$I t WHERE t.keep_until IS NOT NULL ORDER BY t.queue LIMIT 1) AS v
      UNION ALL
      SELECT (SELECT t.queue FROM ${s}.%1$I t WHERE t.keep_until IS NOT NULL AND t.queue > r.v ORDER BY t.queue LIMIT 1) FROM r WHERE r.v IS NOT NULL)
    SELECT (SELECT count(*) FROM (SELECT 1 FROM ${s}.%1$I t WHERE t.keep_until IS NULL LIMIT %2$s) f)
      + coalesce((SELECT sum((SELECT count(*) FROM (SELECT 1 FROM ${s}.%1$I t
          WHERE t.queue = r.v AND t.keep_until IS NOT NULL AND t.keep_until > %3$s LIMIT %2$s) x)) FROM r WHERE r.v IS NOT NULL), 0)',
    p_part, p_limit + 1, p_now) INTO k;
  RETURN k;
END
$fn$;

SELECT ${s}.retire_outcome_partitions();
`;
  },
};
