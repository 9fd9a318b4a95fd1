// Migration 25 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/** Job ids one partition of `outbox_receipts` covers unless `partition_widths` says otherwise. */
export const RECEIPT_PARTITION_IDS = 1_000_000;

/**
 * 25 `outbox_receipts` partitioned: the table becomes a declaratively partitioned one, by ranges of
 * `message_id` (the job ids of the outbox's messages, issued in order), so retention drops whole
 * partitions instead of deleting rows. The existing table becomes the DEFAULT partition as it is
 * (no copy): its rows leave by DELETE as before, and so do rows whose id falls outside every range
 * (a retention round that ran late).
 *
 * `retire_receipt_partitions(age)` is retention's step: it creates the ranges for the next two
 * widths of ids above the ids already issued, then drops, oldest first, each range whose ids were
 * all issued before `now - age` and whose newest receipt is older than that (one index seek per
 * outbox in the range, not a read of its rows), under a short lock of the table (taken only when
 * there is a range to make or to drop, and given up after 200 ms: the next round tries again). It returns the rows it retired,
 * from the statistics of each dropped partition (an estimate).
 */
export const MIGRATION_25: PostgresMigration = {
  version: 25,
  name: 'outbox receipts partitioned by id range',
  sql: (s: string) => `
CREATE TABLE ${s}.partition_widths (
  parent text PRIMARY KEY,
  width bigint NOT NULL CHECK (width > 0)
);
INSERT INTO ${s}.partition_widths (parent, width) VALUES ('outbox_receipts', ${RECEIPT_PARTITION_IDS});
-- The ranges retention made: [lo, hi) of message ids, partition outbox_receipts_p<lo>; full_at: when a
-- round first saw every id of the range issued.
CREATE TABLE ${s}.range_partitions (
  parent text NOT NULL,
  lo bigint NOT NULL,
  hi bigint NOT NULL,
  full_at bigint,
  PRIMARY KEY (parent, lo)
);
ALTER TABLE ${s}.outbox_receipts RENAME TO outbox_receipts_default;
ALTER INDEX ${s}.outbox_receipts_pkey RENAME TO outbox_receipts_default_pkey;
ALTER INDEX ${s}.outbox_receipts_delivered_idx RENAME TO outbox_receipts_default_delivered_idx;
CREATE TABLE ${s}.outbox_receipts (
  outbox text NOT NULL,
  message_id bigint NOT NULL,
  receipt json NOT NULL,
  delivered_at bigint NOT NULL,
  PRIMARY KEY (outbox, message_id)
) PARTITION BY RANGE (message_id);
CREATE INDEX outbox_receipts_delivered_idx ON ${s}.outbox_receipts (outbox, delivered_at);
ALTER TABLE ${s}.outbox_receipts ATTACH PARTITION ${s}.outbox_receipts_default DEFAULT;

CREATE FUNCTION ${s}.retire_receipt_partitions(p_age_ms bigint) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  w bigint;
  issued bigint;
  top bigint;
  cut bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint - p_age_ms;
  p record;
  part text;
  newest bigint;
  est real;
  n bigint := 0;
BEGIN
  SELECT width INTO w FROM ${s}.partition_widths WHERE parent = 'outbox_receipts';
  EXECUTE format('SELECT last_value FROM %s', pg_get_serial_sequence('${s.replace(/'/g, "''")}.jobs', 'id')) INTO issued;
  UPDATE ${s}.range_partitions SET full_at = cut + p_age_ms
  WHERE parent = 'outbox_receipts' AND full_at IS NULL AND hi <= issued + 1;
  SELECT max(hi) INTO top FROM ${s}.range_partitions WHERE parent = 'outbox_receipts';
  -- Nothing to make and nothing to drop: no lock at all.
  IF top IS NOT NULL AND top >= issued + 2 * w AND NOT EXISTS (
    SELECT 1 FROM ${s}.range_partitions WHERE parent = 'outbox_receipts' AND full_at < cut) THEN
    RETURN 0;
  END IF;
  -- A short wait at most: inserts of receipts queue behind a waiting lock.
  PERFORM set_config('lock_timeout', '200', true);
  BEGIN
    -- Parent first, as every insert locks it before its partition: no cycle with them.
    LOCK TABLE ${s}.outbox_receipts IN ACCESS EXCLUSIVE MODE;
  EXCEPTION WHEN lock_not_available THEN
    RETURN 0;
  END;
  EXECUTE format('SELECT last_value FROM %s', pg_get_serial_sequence('${s.replace(/'/g, "''")}.jobs', 'id')) INTO issued;
  IF top IS NULL OR top <= issued THEN
    -- Ids up to the last issued may already sit in the default partition: start above them.
    top := (issued / w + 1) * w;
  END IF;
  WHILE top < issued + 2 * w LOOP
    EXECUTE format('CREATE TABLE ${s}.%I PARTITION OF ${s}.outbox_receipts FOR VALUES FROM (%s) TO (%s)',
      'outbox_receipts_p' || top, top, top + w);
    INSERT INTO ${s}.range_partitions (parent, lo, hi) VALUES ('outbox_receipts', top, top + w);
    top := top + w;
  END LOOP;
  -- A range stays for the retention period after its last id was issued, so receipts of its
  -- messages delivered in that time land in it (a later one lands in the default partition).
  FOR p IN SELECT lo, hi FROM ${s}.range_partitions WHERE parent = 'outbox_receipts' AND full_at < cut ORDER BY lo LOOP
    part := 'outbox_receipts_p' || p.lo;
    -- The newest receipt of the range: one seek per outbox (a loose scan of its (outbox, delivered_at) index).
    EXECUTE format('WITH RECURSIVE r AS (
        SELECT (SELECT t.outbox FROM ${s}.%1$I t ORDER BY t.outbox LIMIT 1) AS v
        UNION ALL
        SELECT (SELECT t.outbox FROM ${s}.%1$I t WHERE t.outbox > r.v ORDER BY t.outbox LIMIT 1) FROM r WHERE r.v IS NOT NULL)
      SELECT max((SELECT t.delivered_at FROM ${s}.%1$I t WHERE t.outbox = r.v ORDER BY t.delivered_at DESC LIMIT 1))
      FROM r WHERE r.v IS NOT NULL', part) INTO newest;
    CONTINUE WHEN newest IS NOT NULL AND newest >= cut;
    SELECT c.reltuples INTO est FROM pg_class c WHERE c.oid = format('${s}.%I', part)::regclass;
    n := n + greatest(coalesce(est, 0), 0)::bigint;
    EXECUTE format('DROP TABLE ${s}.%I', part);
    DELETE FROM ${s}.range_partitions WHERE parent = 'outbox_receipts' AND lo = p.lo;
  END LOOP;
  RETURN n;
END
$fn$;
`,
};
