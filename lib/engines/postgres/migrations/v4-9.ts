// Migrations 4 to 9 of the PostgreSQL schema (released: never edit one, add the next). The runner is ../migrations.ts.
import { countDeltas, dueBucket, foldSometimesStmt, queueCountsMigrationSql } from '../counts.sql.js';
import type { PostgresMigration } from '../migrations.js';
import { pgLiteral } from './v1-3.js';

/** 4 queue counters, 5 cron schedules, 6 per-minute throughput, 7 inline counter deltas, 8 canonical key locks, 9 inbox and delivery receipts. */
export const MIGRATIONS_4_TO_9: readonly PostgresMigration[] = [
  {
    version: 4,
    name: 'queue counters',
    // Per-queue counters kept by statement triggers, so stats() does not count rows (counts.sql.ts).
    sql: queueCountsMigrationSql,
  },
  {
    version: 5,
    name: 'cron schedules',
    // Cron rows store interval_ms = 0 (the API reports null); paused and owner serve the operator API and owned schedules.
    sql: (s: string) => `
ALTER TABLE ${s}.schedules
  ADD COLUMN time_zone text NOT NULL DEFAULT 'UTC',
  ADD COLUMN catch_up text NOT NULL DEFAULT 'all' CHECK (catch_up IN ('all', 'latest', 'none')),
  ADD COLUMN owner text,
  ADD COLUMN paused boolean NOT NULL DEFAULT false;
`,
  },
  {
    version: 6,
    name: 'per-minute queue throughput',
    // Written by the store's outcome counter (lib/internal/outcome-counter.ts) every few
    // seconds, never by an ack itself; read by the dashboard's throughput chart.
    sql: (s: string) => `
CREATE TABLE ${s}.queue_minutes (
  queue text NOT NULL,
  minute bigint NOT NULL,
  completed bigint NOT NULL DEFAULT 0,
  retried bigint NOT NULL DEFAULT 0,
  dead bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, minute)
);
CREATE INDEX queue_minutes_minute_idx ON ${s}.queue_minutes (minute);
`,
  },
  {
    version: 7,
    name: 'inline queue counter deltas',
    // The statements that change jobs write their own counter deltas (counts.sql.ts), at about a
    // quarter of the triggers' cost per statement: the triggers go, and the functions that change
    // jobs are re-created to write theirs. Processes of an older alkstore must not change jobs
    // after this migration (their statements would not count): stop them before upgrading.
    sql: inlineCountsMigrationSql,
  },
  {
    version: 8,
    name: 'canonical key locks and redrive conflicts',
    // Key locks (ordering keys, and now unique keys too) are taken in one order inside a statement
    // or a bulk, so two callers with the same keys in different orders never deadlock; a redrive
    // that meets a unique key held by a live job redrives the rest and reports the conflicts.
    sql: keyLocksMigrationSql,
  },
  {
    version: 9,
    name: 'inbox and delivery receipts',
    sql: (s: string) => `
-- Consumer inbox: the primary key is the effectively-once guard (claim inserts first, inside the caller's transaction).
CREATE TABLE ${s}.inbox (
  inbox text NOT NULL,
  message_id text NOT NULL,
  state text NOT NULL CHECK (state IN ('done', 'failed', 'dead')),
  attempts integer NOT NULL,
  received_at bigint NOT NULL,
  done_at bigint,
  last_error text,
  PRIMARY KEY (inbox, message_id)
);
CREATE INDEX inbox_done_idx ON ${s}.inbox (inbox, done_at) WHERE state = 'done';
-- The broker's receipt of a delivered outbox message (its row is gone once acked), for reconciliation.
CREATE TABLE ${s}.outbox_receipts (
  outbox text NOT NULL,
  message_id bigint NOT NULL,
  receipt json NOT NULL,
  delivered_at bigint NOT NULL,
  PRIMARY KEY (outbox, message_id)
);
CREATE INDEX outbox_receipts_delivered_idx ON ${s}.outbox_receipts (outbox, delivered_at);
`,
  },
];

/** Migration 7: drops the counter triggers; re-creates the functions that change jobs with their own deltas. */
function inlineCountsMigrationSql(s: string): string {
  const now = 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint';
  const jobs = `${s}.jobs`;
  return `
-- In-flight writers finish (their triggers still count) before the triggers go.
LOCK TABLE ${jobs} IN SHARE ROW EXCLUSIVE MODE;
DROP TRIGGER jobs_counts_insert ON ${jobs};
DROP TRIGGER jobs_counts_update ON ${jobs};
DROP TRIGGER jobs_counts_delete ON ${jobs};
DROP FUNCTION ${s}.jobs_counts_insert();
DROP FUNCTION ${s}.jobs_counts_update();
DROP FUNCTION ${s}.jobs_counts_delete();

-- Migration 2's signature: the same job through the keyed function, which counts it.
CREATE OR REPLACE FUNCTION ${s}.enqueue_job(
  p_queue text, p_payload text, p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
BEGIN
  RETURN ${s}.enqueue_job(p_queue, p_payload, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms, p_retention_ms,
    p_delay_ms, p_run_at, p_expires_in_ms, p_channel, p_wake, NULL::text, NULL::text, false, NULL::text);
END
$fn$;

${keyedEnqueueFunctionSql(
  s,
  `  IF p_ordering_key IS NOT NULL THEN
    PERFORM ${s}.ordering_lock(p_queue, p_ordering_key);
`,
)}CREATE OR REPLACE FUNCTION ${s}.retry_dead(p_queue text, p_ids bigint[], p_channel text, p_wake text)
RETURNS integer LANGUAGE plpgsql AS $fn$
DECLARE
  v_keys text[];
  v_key text;
  v_moved integer;
  v_now bigint := ${now};
BEGIN
  SELECT array_agg(DISTINCT ordering_key ORDER BY ordering_key) INTO v_keys FROM ${jobs}
  WHERE queue = p_queue AND state = 'dead' AND id = ANY (p_ids) AND ordering_key IS NOT NULL;
  FOREACH v_key IN ARRAY coalesce(v_keys, '{}') LOOP
    PERFORM ${s}.ordering_lock(p_queue, v_key);
  END LOOP;
  WITH u AS (
    UPDATE ${jobs} SET state = 'pending', attempts = 0, run_at = v_now, died_at = NULL, claim_token = NULL,
      claimed_until = NULL, worker_id = NULL, blocked = ordering_key IS NOT NULL
    WHERE queue = p_queue AND state = 'dead' AND id = ANY (p_ids)
    RETURNING run_at),
  c AS (${countDeltas(
    s,
    `SELECT p_queue, x.state, x.b, sum(x.n) FROM (
       SELECT 'dead' AS state, 0::bigint AS b, -1 AS n FROM u
       UNION ALL SELECT 'pending', ${dueBucket("'pending'", 'u.run_at', 'v_now')}, 1 FROM u
     ) x GROUP BY x.state, x.b HAVING sum(x.n) <> 0`,
  )})
  SELECT count(*) INTO v_moved FROM u;
  FOREACH v_key IN ARRAY coalesce(v_keys, '{}') LOOP
    PERFORM ${s}.ordering_next(p_queue, v_key, '{}', p_channel, p_wake);
  END LOOP;
  IF v_moved > 0 THEN
    ${foldSometimesStmt(s, 'p_queue')}
    PERFORM pg_notify(p_channel, p_wake);
  END IF;
  RETURN v_moved;
END
$fn$;

-- Rebuilds one queue's counters from its rows: the repair after jobs were changed by statements
-- that do not count (hand-written SQL, an older alkstore). Holds off every writer of jobs until
-- the calling transaction ends.
CREATE FUNCTION ${s}.recount_queue_counts(p_queue text) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint := ${now};
BEGIN
  LOCK TABLE ${jobs} IN SHARE MODE;
  v_now := ${now};
  DELETE FROM ${s}.queue_counts WHERE queue = p_queue;
  ${countDeltas(s, `SELECT queue, state, ${dueBucket('state', 'run_at', 'v_now')} AS b, count(*) FROM ${jobs} WHERE queue = p_queue GROUP BY queue, state, b`)};
END
$fn$;
`;
}

/** An SQL string literal of a quoted identifier (to mix the schema into lock keys). */
/** Migration 8: `lock_keys`, the keyed enqueue through it, and `redrive_dead`. */
function keyLocksMigrationSql(s: string): string {
  const now = 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint';
  const jobs = `${s}.jobs`;
  return `
-- Takes the key locks of keys of one queue, each once, in one canonical order: by key in byte order
-- (COLLATE "C": code point order), an ordering key before a unique key of the same text. Every
-- statement or bulk that may take more than one key lock takes them here first, so two of them never
-- wait on each other in a cycle. Held to the end of the transaction. A unique key's lock is taken
-- before its row is inserted, so the wait on the unique index never happens while holding another
-- key's lock (the lock holder is the only writer of the key).
CREATE FUNCTION ${s}.lock_keys(p_queue text, p_ordering text[], p_unique text[]) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT x.key, x.kind FROM (
      SELECT o.key, 0 AS kind FROM unnest(p_ordering) AS o(key)
      UNION SELECT u.key, 1 AS kind FROM unnest(p_unique) AS u(key)
    ) x WHERE x.key IS NOT NULL ORDER BY x.key COLLATE "C", x.kind
  LOOP
    IF r.kind = 0 THEN
      PERFORM ${s}.ordering_lock(p_queue, r.key);
    ELSE
      PERFORM pg_advisory_xact_lock(hashtextextended(r.key, hashtextextended(${pgLiteral(s)} || '/unique/' || p_queue, 7)));
    END IF;
  END LOOP;
END
$fn$;

${keyedEnqueueFunctionSql(
  s,
  `  IF p_ordering_key IS NOT NULL OR p_unique_key IS NOT NULL THEN
    PERFORM ${s}.lock_keys(p_queue, ARRAY[p_ordering_key], ARRAY[p_unique_key]);
  END IF;
  IF p_ordering_key IS NOT NULL THEN
`,
)}
-- Dead jobs back to pending, in id order; ordered ones rejoin their key behind any live head. A dead
-- job whose unique key a live job holds (or an earlier job of this redrive just took back) stays
-- dead and is reported in conflicts (ascending ids). The keys are locked first, in lock_keys order.
CREATE FUNCTION ${s}.redrive_dead(p_queue text, p_ids bigint[], p_channel text, p_wake text)
RETURNS TABLE (moved integer, conflicts bigint[]) LANGUAGE plpgsql AS $fn$
DECLARE
  v_okeys text[];
  v_ukeys text[];
  v_key text;
  v_moved integer;
  v_conflicts bigint[];
  v_now bigint := ${now};
BEGIN
  SELECT array_agg(DISTINCT j.ordering_key) FILTER (WHERE j.ordering_key IS NOT NULL),
         array_agg(DISTINCT j.unique_key) FILTER (WHERE j.unique_key IS NOT NULL)
  INTO v_okeys, v_ukeys FROM ${jobs} j
  WHERE j.queue = p_queue AND j.state = 'dead' AND j.id = ANY (p_ids);
  PERFORM ${s}.lock_keys(p_queue, coalesce(v_okeys, '{}'), coalesce(v_ukeys, '{}'));
  v_now := ${now};
  WITH cand AS MATERIALIZED (
    SELECT j.id, j.unique_key IS NOT NULL AND (
        row_number() OVER (PARTITION BY j.unique_key ORDER BY j.id) > 1
        OR EXISTS (SELECT 1 FROM ${jobs} l WHERE l.queue = p_queue AND l.unique_key = j.unique_key AND l.state IN ('pending', 'processing'))
      ) AS conflict
    FROM ${jobs} j WHERE j.queue = p_queue AND j.state = 'dead' AND j.id = ANY (p_ids)
  ),
  u AS (
    UPDATE ${jobs} j SET state = 'pending', attempts = 0, run_at = v_now, died_at = NULL, claim_token = NULL,
      claimed_until = NULL, worker_id = NULL, blocked = j.ordering_key IS NOT NULL
    FROM cand c WHERE j.id = c.id AND NOT c.conflict AND j.queue = p_queue AND j.state = 'dead'
    RETURNING j.run_at),
  c AS (${countDeltas(
    s,
    `SELECT p_queue, x.state, x.b, sum(x.n) FROM (
       SELECT 'dead' AS state, 0::bigint AS b, -1 AS n FROM u
       UNION ALL SELECT 'pending', ${dueBucket("'pending'", 'u.run_at', 'v_now')}, 1 FROM u
     ) x GROUP BY x.state, x.b HAVING sum(x.n) <> 0`,
  )})
  SELECT (SELECT count(*) FROM u), (SELECT coalesce(array_agg(cand.id ORDER BY cand.id), '{}') FROM cand WHERE cand.conflict)
  INTO v_moved, v_conflicts;
  FOREACH v_key IN ARRAY coalesce(v_okeys, '{}') LOOP
    PERFORM ${s}.ordering_next(p_queue, v_key, '{}', p_channel, p_wake);
  END LOOP;
  IF v_moved > 0 THEN
    ${foldSometimesStmt(s, 'p_queue')}
    PERFORM pg_notify(p_channel, p_wake);
  END IF;
  moved := v_moved;
  conflicts := v_conflicts;
  RETURN NEXT;
END
$fn$;
`;
}

/**
 * `enqueue_job` with headers, unique and ordering keys (the keyed enqueue), as migration 7 wrote it
 * and migration 8 re-creates it. `lock` opens the `IF` that takes the key locks and decides
 * `v_blocked` (its body continues with the blocked check and `END IF`).
 */
export function keyedEnqueueFunctionSql(s: string, lock: string): string {
  const now = 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint';
  const jobs = `${s}.jobs`;
  return `CREATE OR REPLACE FUNCTION ${s}.enqueue_job(
  p_queue text, p_payload text, p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text, p_headers text, p_unique_key text, p_replace boolean, p_ordering_key text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint := ${now};
  v_run_at bigint;
  v_blocked boolean := false;
  v_id bigint;
  v_state text;
  v_old_at bigint;
  v_old_b bigint;
  v_new_b bigint;
BEGIN
  v_run_at := CASE WHEN p_delay_ms IS NOT NULL THEN v_now + p_delay_ms ELSE coalesce(p_run_at, v_now) END;
${lock}    v_blocked := EXISTS (SELECT 1 FROM ${jobs} WHERE queue = p_queue AND ordering_key = p_ordering_key AND state IN ('pending', 'processing'));
  END IF;
  LOOP
    WITH i AS (
      INSERT INTO ${jobs} (queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms,
                           dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key, blocked)
      VALUES (p_queue, p_payload::json, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms, p_retention_ms,
              v_run_at, v_now, v_now + p_expires_in_ms, p_headers::json, p_unique_key, p_ordering_key, v_blocked)
      ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL AND state IN ('pending', 'processing') DO NOTHING
      RETURNING id),
    c AS (${countDeltas(s, `SELECT p_queue, 'pending', ${dueBucket("'pending'", 'v_run_at', 'v_now')}, 1 FROM i`)})
    SELECT i.id INTO v_id FROM i;
    IF v_id IS NOT NULL THEN
      ${foldSometimesStmt(s, 'p_queue')}
      IF NOT v_blocked THEN PERFORM pg_notify(p_channel, p_wake); END IF;
      RETURN v_id;
    END IF;
    -- A live job holds the key (its transaction has committed, or the insert would still wait).
    SELECT id, state INTO v_id, v_state FROM ${jobs}
    WHERE queue = p_queue AND unique_key = p_unique_key AND state IN ('pending', 'processing');
    IF v_id IS NOT NULL THEN
      IF p_replace AND v_state = 'pending' THEN
        -- Locked first, so the old run_at (the bucket its count leaves) is the one replaced.
        SELECT run_at INTO v_old_at FROM ${jobs} WHERE id = v_id AND state = 'pending' FOR UPDATE;
        IF FOUND THEN
          UPDATE ${jobs} SET payload = p_payload::json, headers = p_headers::json, run_at = v_run_at WHERE id = v_id;
          v_old_b := ${dueBucket("'pending'", 'v_old_at', 'v_now')};
          v_new_b := ${dueBucket("'pending'", 'v_run_at', 'v_now')};
          IF v_old_b <> v_new_b THEN
            ${countDeltas(s, `VALUES (p_queue, 'pending', v_old_b, -1), (p_queue, 'pending', v_new_b, 1)`)};
          END IF;
          PERFORM pg_notify(p_channel, p_wake);
        END IF;
      END IF;
      RETURN v_id;
    END IF;
    -- It finished between the insert and the look-up: try again.
  END LOOP;
END
$fn$;

`;
}

/** The schema version this build of alkstore expects. */
