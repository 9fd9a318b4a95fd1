// Migration 27 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 27 `outbox_receipts`: the table from before the partitioning (migration 25 made it the DEFAULT
 * partition) becomes the range below the first id range the retention runner made
 * (`outbox_receipts_legacy`), beside a new, empty DEFAULT partition. Making a range reads the default
 * partition to check that none of its rows fall in the new range, under the lock of the table: with
 * the whole history there, each new range of a store upgraded with many receipts held every receipt
 * write back for as long as that read took. The default partition now takes only receipts whose range
 * was already dropped (a message delivered long after the others of its range), and stays small.
 *
 * No copy: receipts of the old default partition whose ids are at or above that bound (ids of ranges
 * dropped before, delivered late) are moved to the new default partition first (a few rows, found by
 * one read of the table); attaching the table as a range reads it once more to check its ids, under
 * the migration's lock. Its rows leave by the retention runner's DELETE as before.
 * `retire_receipt_partitions` is redefined to make its first range at or above that bound
 * (`partition_widths.first_id`, added by migration 26), whatever the width.
 */
export const MIGRATION_27: PostgresMigration = {
  version: 27,
  name: 'outbox receipts history as a range',
  sql: (s: string) => `
ALTER TABLE ${s}.outbox_receipts DETACH PARTITION ${s}.outbox_receipts_default;
ALTER TABLE ${s}.outbox_receipts_default RENAME TO outbox_receipts_legacy;
ALTER INDEX ${s}.outbox_receipts_default_pkey RENAME TO outbox_receipts_legacy_pkey;
ALTER INDEX ${s}.outbox_receipts_default_delivered_idx RENAME TO outbox_receipts_legacy_delivered_idx;
CREATE TABLE ${s}.outbox_receipts_default PARTITION OF ${s}.outbox_receipts DEFAULT;
DO $mig$
DECLARE
  w bigint;
  issued bigint;
  bound bigint;
BEGIN
  SELECT width INTO w FROM ${s}.partition_widths WHERE parent = 'outbox_receipts';
  EXECUTE format('SELECT last_value FROM %s', pg_get_serial_sequence('${s.replace(/'/g, "''")}.jobs', 'id')) INTO issued;
  -- Below the first range made, or (none made yet) above every id issued.
  SELECT min(lo) INTO bound FROM ${s}.range_partitions WHERE parent = 'outbox_receipts';
  bound := coalesce(bound, (issued / w + 1) * w);
  UPDATE ${s}.partition_widths SET first_id = bound WHERE parent = 'outbox_receipts';
  INSERT INTO ${s}.outbox_receipts SELECT * FROM ${s}.outbox_receipts_legacy WHERE message_id >= bound;
  DELETE FROM ${s}.outbox_receipts_legacy WHERE message_id >= bound;
  EXECUTE format('ALTER TABLE ${s}.outbox_receipts ATTACH PARTITION ${s}.outbox_receipts_legacy FOR VALUES FROM (MINVALUE) TO (%s)', bound);
END
$mig$;
-- Migration 25's step, making its first range at or above the ids the table kept holds (first_id),
-- whatever width partition_widths gives it later.
CREATE OR REPLACE FUNCTION ${s}.retire_receipt_partitions(p_age_ms bigint) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  w bigint;
  floor_id bigint;
  issued bigint;
  top bigint;
  cut bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint - p_age_ms;
  p record;
  part text;
  newest bigint;
  est real;
  n bigint := 0;
BEGIN
  SELECT width, first_id INTO w, floor_id FROM ${s}.partition_widths WHERE parent = 'outbox_receipts';
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
    top := greatest((issued / w + 1) * w, floor_id);
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
