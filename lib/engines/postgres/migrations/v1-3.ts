// Migrations 1 to 3 of the PostgreSQL schema (released: never edit one, add the next). The runner is ../migrations.ts.
import type { PostgresMigration } from '../migrations.js';

/** 1 initial, 2 caller-transaction functions, 3 queue features. */
export const MIGRATIONS_1_TO_3: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'initial',
    sql: (s: string) => `
CREATE TABLE ${s}.jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue text NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'processing', 'dead')),
  payload json NOT NULL,
  priority integer NOT NULL DEFAULT 0,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  visibility_timeout_ms bigint NOT NULL,
  backoff_base_ms bigint NOT NULL,
  dead_letter_retention_ms bigint,
  run_at bigint NOT NULL,
  enqueued_at bigint NOT NULL,
  expires_at bigint,
  claimed_until bigint,
  claim_token uuid,
  worker_id text,
  last_error text,
  died_at bigint
);
-- Claims walk these partial indexes only, so dead and processing backlogs never slow the ready scan.
CREATE INDEX jobs_pending_idx ON ${s}.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending';
CREATE INDEX jobs_processing_idx ON ${s}.jobs (queue, claimed_until) WHERE state = 'processing';
CREATE INDEX jobs_dead_idx ON ${s}.jobs (queue, id) WHERE state = 'dead';
CREATE INDEX jobs_expiring_idx ON ${s}.jobs (queue, expires_at) WHERE expires_at IS NOT NULL AND state <> 'dead';

-- One counter row per stream: the publishing transaction holds its row lock until commit,
-- so offsets are assigned in commit order and a reader never skips a late commit.
CREATE TABLE ${s}.stream_heads (
  stream text PRIMARY KEY,
  last_offset bigint NOT NULL
);
CREATE TABLE ${s}.stream_events (
  stream text NOT NULL,
  seq bigint NOT NULL,
  key text,
  payload json NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (stream, seq)
);
CREATE TABLE ${s}.stream_offsets (
  stream text NOT NULL,
  consumer text NOT NULL,
  saved bigint NOT NULL,
  PRIMARY KEY (stream, consumer)
);

CREATE TABLE ${s}.locks (
  name text PRIMARY KEY,
  owner text NOT NULL,
  expires_at bigint NOT NULL
);

CREATE TABLE ${s}.schedules (
  name text PRIMARY KEY,
  spec text NOT NULL,
  interval_ms bigint NOT NULL,
  queue text NOT NULL,
  payload json NOT NULL,
  priority integer NOT NULL DEFAULT 0,
  max_attempts integer,
  expires_in_ms bigint,
  next_fire_at bigint NOT NULL
);
CREATE INDEX schedules_next_fire_idx ON ${s}.schedules (next_fire_at);
`,
  },
  {
    version: 2,
    name: 'caller-transaction functions',
    // A caller-owned transaction (withTx(queryRunner)) cannot use named prepared statements: the
    // runner owns its connection. An unnamed multi-CTE statement is parsed and planned on every
    // call (about as long as the insert itself); plpgsql caches its plans per connection, so the
    // caller's path costs one short SELECT. Same rows, instants and wakes as the engine's own
    // q_enqueue / s_publish statements (lib/engines/postgres/queue.sql.ts, stream.sql.ts).
    sql: (s: string) => `
CREATE FUNCTION ${s}.enqueue_job(
  p_queue text, p_payload text, p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint;
  v_id bigint;
BEGIN
  INSERT INTO ${s}.jobs (queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms,
                         dead_letter_retention_ms, run_at, enqueued_at, expires_at)
  VALUES (p_queue, p_payload::json, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms, p_retention_ms,
          CASE WHEN p_delay_ms IS NOT NULL THEN v_now + p_delay_ms ELSE coalesce(p_run_at, v_now) END,
          v_now, v_now + p_expires_in_ms)
  RETURNING id INTO v_id;
  PERFORM pg_notify(p_channel, p_wake);
  RETURN v_id;
END
$fn$;

CREATE FUNCTION ${s}.publish_event(p_stream text, p_key text, p_payload text, p_channel text, p_wake text)
RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_offset bigint;
BEGIN
  -- The counter row stays locked until the transaction ends: offsets follow commit order.
  INSERT INTO ${s}.stream_heads AS h (stream, last_offset) VALUES (p_stream, 1)
  ON CONFLICT (stream) DO UPDATE SET last_offset = h.last_offset + 1
  RETURNING h.last_offset INTO v_offset;
  INSERT INTO ${s}.stream_events (stream, seq, key, payload, created_at)
  VALUES (p_stream, v_offset, p_key, p_payload::json, floor(extract(epoch from clock_timestamp()) * 1000)::bigint);
  PERFORM pg_notify(p_channel, p_wake);
  RETURN v_offset;
END
$fn$;
`,
  },
  {
    version: 3,
    name: 'queue features',
    // Headers, unique jobs, ordered keys, pause and rate limits (SPEC §10). Jobs waiting behind an
    // older live job of their ordering key are `blocked`: the ready index leaves them out, so a claim
    // never walks them, and the plain path keeps one index of the same shape as before.
    sql: (s: string) => `
ALTER TABLE ${s}.jobs
  ADD COLUMN headers json,
  ADD COLUMN unique_key text,
  ADD COLUMN ordering_key text,
  ADD COLUMN blocked boolean NOT NULL DEFAULT false;
DROP INDEX ${s}.jobs_pending_idx;
CREATE INDEX jobs_pending_idx ON ${s}.jobs (queue, priority DESC, run_at, id) WHERE state = 'pending' AND NOT blocked;
CREATE UNIQUE INDEX jobs_unique_idx ON ${s}.jobs (queue, unique_key) WHERE unique_key IS NOT NULL AND state IN ('pending', 'processing');
CREATE INDEX jobs_ordering_idx ON ${s}.jobs (queue, ordering_key, id) WHERE ordering_key IS NOT NULL AND state IN ('pending', 'processing');

-- One row per queue with settings; claims read it by primary key and lock it only while a rate limit is set.
CREATE TABLE ${s}.queue_settings (
  queue text PRIMARY KEY,
  paused boolean NOT NULL DEFAULT false,
  rate_max integer,
  rate_per_ms bigint,
  window_start bigint NOT NULL DEFAULT 0,
  window_count integer NOT NULL DEFAULT 0
);

-- Serializes, per (queue, ordering key), deciding which job is the key's head: enqueues and
-- finishes of the key's jobs take it, claims never do. Held to the end of the transaction. A hash
-- collision only serializes two keys needlessly.
CREATE FUNCTION ${s}.ordering_lock(p_queue text, p_key text) RETURNS void LANGUAGE sql AS $fn$
  SELECT pg_advisory_xact_lock(hashtextextended(p_key, hashtextextended(${pgLiteral(s)} || '/' || p_queue, 7)))
$fn$;

-- After jobs p_done of a key left the live states: unless a head is still live, the oldest live
-- job of the key becomes its head. Runs its statements with fresh snapshots after the key lock,
-- so an enqueue of the key that committed meanwhile is seen; p_done is excluded whether or not
-- the calling statement's own changes are visible here.
CREATE FUNCTION ${s}.ordering_next(p_queue text, p_key text, p_done bigint[], p_channel text, p_wake text)
RETURNS integer LANGUAGE plpgsql AS $fn$
DECLARE
  v_id bigint;
BEGIN
  PERFORM ${s}.ordering_lock(p_queue, p_key);
  LOOP
    PERFORM 1 FROM ${s}.jobs
    WHERE queue = p_queue AND ordering_key = p_key AND state IN ('pending', 'processing') AND NOT blocked AND id <> ALL (p_done)
    LIMIT 1;
    IF FOUND THEN RETURN 0; END IF;
    SELECT id INTO v_id FROM ${s}.jobs
    WHERE queue = p_queue AND ordering_key = p_key AND state IN ('pending', 'processing') AND id <> ALL (p_done)
    ORDER BY id LIMIT 1;
    IF v_id IS NULL THEN RETURN 0; END IF;
    UPDATE ${s}.jobs SET blocked = false WHERE id = v_id AND blocked AND state = 'pending';
    IF FOUND THEN
      PERFORM pg_notify(p_channel, p_wake);
      RETURN 1;
    END IF;
    -- The candidate was cancelled or expired under us: look again.
  END LOOP;
END
$fn$;

-- Enqueue with headers, unique key and ordering key; used by caller-owned transactions and by
-- every enqueue that carries a key. Same row and wake as the engine's q_enqueue statement.
CREATE FUNCTION ${s}.enqueue_job(
  p_queue text, p_payload text, p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text, p_headers text, p_unique_key text, p_replace boolean, p_ordering_key text
) RETURNS bigint LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint;
  v_run_at bigint;
  v_blocked boolean := false;
  v_id bigint;
  v_state text;
BEGIN
  v_run_at := CASE WHEN p_delay_ms IS NOT NULL THEN v_now + p_delay_ms ELSE coalesce(p_run_at, v_now) END;
  IF p_ordering_key IS NOT NULL THEN
    PERFORM ${s}.ordering_lock(p_queue, p_ordering_key);
    v_blocked := EXISTS (SELECT 1 FROM ${s}.jobs WHERE queue = p_queue AND ordering_key = p_ordering_key AND state IN ('pending', 'processing'));
  END IF;
  LOOP
    INSERT INTO ${s}.jobs (queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms,
                           dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key, blocked)
    VALUES (p_queue, p_payload::json, p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms, p_retention_ms,
            v_run_at, v_now, v_now + p_expires_in_ms, p_headers::json, p_unique_key, p_ordering_key, v_blocked)
    ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL AND state IN ('pending', 'processing') DO NOTHING
    RETURNING id INTO v_id;
    IF v_id IS NOT NULL THEN
      IF NOT v_blocked THEN PERFORM pg_notify(p_channel, p_wake); END IF;
      RETURN v_id;
    END IF;
    -- A live job holds the key (its transaction has committed, or the insert would still wait).
    SELECT id, state INTO v_id, v_state FROM ${s}.jobs
    WHERE queue = p_queue AND unique_key = p_unique_key AND state IN ('pending', 'processing');
    IF v_id IS NOT NULL THEN
      IF p_replace AND v_state = 'pending' THEN
        UPDATE ${s}.jobs SET payload = p_payload::json, headers = p_headers::json, run_at = v_run_at
        WHERE id = v_id AND state = 'pending';
        IF FOUND THEN PERFORM pg_notify(p_channel, p_wake); END IF;
      END IF;
      RETURN v_id;
    END IF;
    -- It finished between the insert and the look-up: try again.
  END LOOP;
END
$fn$;

CREATE FUNCTION ${s}.enqueue_jobs(
  p_queue text, p_payloads text[], p_priority integer, p_max_attempts integer, p_visibility_ms bigint,
  p_backoff_base_ms bigint, p_retention_ms bigint, p_delay_ms bigint, p_run_at bigint, p_expires_in_ms bigint,
  p_channel text, p_wake text, p_headers text, p_unique_key text, p_replace boolean, p_ordering_key text
) RETURNS SETOF bigint LANGUAGE plpgsql AS $fn$
BEGIN
  -- One after another, each seeing the ones before: a batch behaves as enqueues in order.
  FOR i IN 1 .. coalesce(array_length(p_payloads, 1), 0) LOOP
    RETURN NEXT ${s}.enqueue_job(p_queue, p_payloads[i], p_priority, p_max_attempts, p_visibility_ms, p_backoff_base_ms,
      p_retention_ms, p_delay_ms, p_run_at, p_expires_in_ms, p_channel, p_wake, p_headers, p_unique_key, p_replace, p_ordering_key);
  END LOOP;
END
$fn$;

-- Dead jobs back to pending; ordered ones rejoin their key behind any live head.
CREATE FUNCTION ${s}.retry_dead(p_queue text, p_ids bigint[], p_channel text, p_wake text)
RETURNS integer LANGUAGE plpgsql AS $fn$
DECLARE
  v_keys text[];
  v_key text;
  v_moved integer;
  v_now bigint := floor(extract(epoch from clock_timestamp()) * 1000)::bigint;
BEGIN
  SELECT array_agg(DISTINCT ordering_key ORDER BY ordering_key) INTO v_keys FROM ${s}.jobs
  WHERE queue = p_queue AND state = 'dead' AND id = ANY (p_ids) AND ordering_key IS NOT NULL;
  FOREACH v_key IN ARRAY coalesce(v_keys, '{}') LOOP
    PERFORM ${s}.ordering_lock(p_queue, v_key);
  END LOOP;
  UPDATE ${s}.jobs SET state = 'pending', attempts = 0, run_at = v_now, died_at = NULL, claim_token = NULL,
    claimed_until = NULL, worker_id = NULL, blocked = ordering_key IS NOT NULL
  WHERE queue = p_queue AND state = 'dead' AND id = ANY (p_ids);
  GET DIAGNOSTICS v_moved = ROW_COUNT;
  FOREACH v_key IN ARRAY coalesce(v_keys, '{}') LOOP
    PERFORM ${s}.ordering_next(p_queue, v_key, '{}', p_channel, p_wake);
  END LOOP;
  IF v_moved > 0 THEN PERFORM pg_notify(p_channel, p_wake); END IF;
  RETURN v_moved;
END
$fn$;
`,
  },
];

export function pgLiteral(quoted: string): string {
  return `'${quoted.replace(/'/g, "''")}'`;
}
