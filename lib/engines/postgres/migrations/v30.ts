// Migration 30 of the PostgreSQL schema (never edit a released one, add the next). The runner is ../migrations.ts.
import { countDeltas, dueBucket, foldSometimesStmt } from '../counts.sql.js';
import type { PostgresMigration } from '../migrations.js';

/**
 * 30 `enqueue_job_handoff`: a job inserted already claimed by an idle worker of the calling process
 * (a local hand-off) when it may be, else enqueued as `enqueue_job` does. A workflow run's start uses it
 * for the job of the run's first pass, which carries the run's ordering key: the key's lock is taken
 * and its live jobs looked for inside the function, where each statement sees what committed before it
 * (a start's own statement began before the lock), so a pass enqueued by a signal that committed
 * meanwhile keeps the claimed job out (it goes in blocked behind it, as `enqueue_job` would).
 *
 * `p_take`: the caller's checks passed (a worker reserved a slot; the queue is not paused or limited; no
 * job a claim would take first is waiting). The job is claimed only when, besides, it is due now and no
 * job of its ordering key is live: processing, attempts 1, a fresh token, deadline now + `p_lease` (null:
 * its visibility timeout), `worker_id` `p_worker`, counted as processing; no wake (nobody else is to
 * claim it). Otherwise `enqueue_job` inserts it (pending, or blocked behind its key) and wakes. Returns
 * the job's id and, when claimed, its token, deadline, enqueue time and run time.
 */
export const MIGRATION_30: PostgresMigration = {
  version: 30,
  name: 'enqueue with local hand-off',
  sql: (s: string) => `
CREATE FUNCTION ${s}.enqueue_job_handoff(
  p_queue text, p_payload text, p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text, p_headers text, p_unique_key text, p_replace boolean, p_ordering_key text,
  p_take boolean, p_worker text, p_lease bigint
) RETURNS TABLE (id bigint, claim_token text, claimed_until bigint, enqueued_at bigint, run_at bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  v_now bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint;
  v_run_at bigint;
  v_take boolean := coalesce(p_take, false) AND p_worker IS NOT NULL AND p_unique_key IS NULL;
BEGIN
  v_run_at := CASE WHEN p_delay_ms IS NOT NULL THEN v_now + p_delay_ms ELSE coalesce(p_run_at, v_now) END;
  IF v_take AND v_run_at <= v_now AND p_ordering_key IS NOT NULL THEN
    PERFORM ${s}.lock_keys(p_queue, ARRAY[p_ordering_key], ARRAY[NULL::text]);
    v_take := NOT EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.queue = p_queue AND j.ordering_key = p_ordering_key
      AND j.state IN ('pending', 'processing'));
  END IF;
  IF NOT v_take OR v_run_at > v_now THEN
    RETURN QUERY SELECT ${s}.enqueue_job(p_queue, p_payload, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms,
      p_retention_ms, p_delay_ms, p_run_at, p_expires_in_ms, p_channel, p_wake, p_headers, p_unique_key, p_replace,
      p_ordering_key), NULL::text, NULL::bigint, NULL::bigint, NULL::bigint;
    RETURN;
  END IF;
  RETURN QUERY WITH i AS (
    INSERT INTO ${s}.jobs AS j (queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms,
      dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, ordering_key, blocked, state, attempts,
      claim_token, claimed_until, worker_id)
    VALUES (p_queue, p_payload::json, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms, p_retention_ms,
      v_run_at, v_now, v_now + p_expires_in_ms, p_headers::json, p_ordering_key, false, 'processing', 1,
      gen_random_uuid(), v_now + coalesce(p_lease, p_visibility_ms), p_worker)
    RETURNING j.id, j.claim_token, j.claimed_until, j.enqueued_at, j.run_at
  ),
  c AS (${countDeltas(s, `SELECT p_queue, 'processing', ${dueBucket("'processing'", 'i.run_at', 'v_now')}, 1 FROM i`)})
  SELECT i.id, i.claim_token::text, i.claimed_until, i.enqueued_at, i.run_at FROM i;
  ${foldSometimesStmt(s, 'p_queue')}
END
$fn$;
`,
};
