// Migration 12 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/**
 * 12 per-key concurrency, per-key rate limits and global concurrency (issue #27 item 5, SPEC §11;
 * docs/limits.md). Jobs carry their keys; a queue's settings row carries its limits and whether a
 * keyed job was ever enqueued (`keyed`: its claims must count). `limit_counts` is VOLATILE on
 * purpose: called by the limited claim after it locked the queue's settings row, its queries take
 * a fresh snapshot (READ COMMITTED), so they count every claim committed before the lock was granted.
 */
export const MIGRATION_12: PostgresMigration = {
  version: 12,
  name: 'per-key and global limits',
  sql: (s: string) => `
ALTER TABLE ${s}.jobs ADD COLUMN concurrency_key text, ADD COLUMN rate_key text;
ALTER TABLE ${s}.queue_settings ADD COLUMN keyed boolean NOT NULL DEFAULT false, ADD COLUMN concurrency_limit integer,
  ADD COLUMN global_concurrency integer, ADD COLUMN key_rate_max integer, ADD COLUMN key_rate_per_ms bigint;
CREATE TABLE ${s}.key_rate_windows (
  queue text NOT NULL,
  key text NOT NULL,
  window_start bigint NOT NULL,
  window_count integer NOT NULL,
  PRIMARY KEY (queue, key)
);
CREATE INDEX jobs_concurrency_idx ON ${s}.jobs (queue, concurrency_key) WHERE concurrency_key IS NOT NULL AND state = 'processing';
CREATE FUNCTION ${s}.limit_counts(p_queue text, p_locked bigint, p_now bigint, p_global boolean, p_keyed boolean, p_per_ms bigint)
RETURNS TABLE (kind text, key text, n bigint) LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  IF p_global THEN
    RETURN QUERY SELECT 'g'::text, NULL::text, count(*) FROM ${s}.jobs j
      WHERE j.queue = p_queue AND j.state = 'processing' AND j.claimed_until > p_now;
  END IF;
  IF p_keyed THEN
    RETURN QUERY SELECT 'c'::text, j.concurrency_key, count(*) FROM ${s}.jobs j
      WHERE j.queue = p_queue AND j.state = 'processing' AND j.concurrency_key IS NOT NULL AND j.claimed_until > p_now
      GROUP BY j.concurrency_key;
  END IF;
  IF p_per_ms IS NOT NULL THEN
    RETURN QUERY SELECT 'r'::text, w.key, w.window_count::bigint FROM ${s}.key_rate_windows w
      WHERE w.queue = p_queue AND w.window_start = (p_now / p_per_ms) * p_per_ms;
  END IF;
END
$fn$;
CREATE FUNCTION ${s}.enqueue_job_limited(
  p_queue text, p_payload text, p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text, p_headers text, p_unique_key text, p_replace boolean, p_ordering_key text,
  p_concurrency_key text, p_rate_key text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_id bigint;
BEGIN
  -- The first keyed job of a queue marks it, in the job's transaction: a claim that can see the
  -- job sees the mark and counts keys; other stores' plain claims learn it from the notification.
  IF NOT EXISTS (SELECT 1 FROM ${s}.queue_settings WHERE queue = p_queue AND keyed) THEN
    INSERT INTO ${s}.queue_settings AS qs (queue, keyed) VALUES (p_queue, true)
      ON CONFLICT (queue) DO UPDATE SET keyed = true WHERE NOT qs.keyed;
    PERFORM pg_notify(p_channel, 's:' || p_queue);
  END IF;
  v_id := ${s}.enqueue_job(p_queue, p_payload, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms, p_retention_ms,
    p_delay_ms, p_run_at, p_expires_in_ms, p_channel, p_wake, p_headers, p_unique_key, p_replace, p_ordering_key);
  -- A unique-key duplicate returns the live job: it keeps the keys it was enqueued with.
  UPDATE ${s}.jobs SET concurrency_key = p_concurrency_key, rate_key = p_rate_key
    WHERE id = v_id AND state = 'pending' AND concurrency_key IS NULL AND rate_key IS NULL;
  RETURN v_id;
END
$fn$;
`,
};
