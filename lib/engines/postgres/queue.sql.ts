import { queueStatsSql } from './counts.sql.js';
import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';

/** Columns of a job as `JobRow` (payload as raw JSON text, token as text). */
export function jobColumns(alias: string): string {
  const a = `${alias}.`;
  return [
    `${a}id`,
    `${a}queue`,
    `${a}state`,
    `${a}payload::text AS payload`,
    `${a}priority`,
    `${a}attempts`,
    `${a}max_attempts`,
    `${a}visibility_timeout_ms`,
    `${a}backoff_base_ms`,
    `${a}dead_letter_retention_ms`,
    `${a}run_at`,
    `${a}enqueued_at`,
    `${a}expires_at`,
    `${a}claimed_until`,
    `${a}claim_token::text AS claim_token`,
    `${a}last_error`,
    `${a}died_at`,
  ].join(', ');
}

/** A job row as selected by {@link jobColumns}; int8 columns are strings. */
export interface JobRow {
  id: string;
  queue: string;
  state: 'pending' | 'processing' | 'dead';
  payload: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  visibility_timeout_ms: string;
  backoff_base_ms: string;
  dead_letter_retention_ms: string | null;
  run_at: string;
  enqueued_at: string;
  expires_at: string | null;
  claimed_until: string | null;
  claim_token: string | null;
  last_error: string | null;
  died_at: string | null;
}

// Handle ops are fenced by token and deadline: state='processing' AND token AND claimed_until > now.
const FENCE = `j.id = $1::bigint AND j.claim_token::text = $2::text AND j.state = 'processing' AND j.claimed_until > t.ms`;
const CLEAR_CLAIM = 'claim_token = NULL, claimed_until = NULL, worker_id = NULL';

/** Queue statements for one schema. Every instant comes from the database clock. */
export function queueSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  const insertCols =
    'queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at';
  // $3..$10: priority, max_attempts, visibility, backoff base, retention, delayMs, runAtMs, expiresInMs
  const stampValues = `$3::int, $4::int, $5::bigint, $6::bigint, $7::bigint,
    CASE WHEN $8::bigint IS NOT NULL THEN t.ms + $8::bigint ELSE coalesce($9::bigint, t.ms) END,
    t.ms, t.ms + $10::bigint`;
  return {
    /** $1 queue, $2 payload json text, $3..$10 stamp, $11 wake payload → id. Wakes on commit. */
    enqueue: s.def(
      'q_enqueue',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ins AS (INSERT INTO ${jobs} (${insertCols}) SELECT $1::text, $2::text::json, ${stampValues} FROM t RETURNING id)
       SELECT ins.id FROM ins, (SELECT ${s.notify('$11')}) AS n`,
    ),
    /**
     * enqueue for a caller-owned transaction (unnamed statements): the same
     * row and wake through the `enqueue_job` function (migration 2), whose
     * plan is cached per connection. Same parameters as enqueue.
     */
    enqueueCall: s.def(
      'q_enqueue_call',
      `SELECT ${s.q}.enqueue_job($1::text, $2::text, $3::int, $4::int, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint, ${s.channel}, $11::text) AS id`,
    ),
    /** Same as enqueue with $2 a text[] of payloads, inserted (and numbered) in array order. */
    enqueueMany: s.def(
      'q_enqueue_many',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ins AS (INSERT INTO ${jobs} (${insertCols})
         SELECT $1::text, p.payload::json, ${stampValues}
         FROM t, unnest($2::text[]) WITH ORDINALITY AS p(payload, ord) ORDER BY p.ord RETURNING id)
       SELECT ins.id FROM ins, (SELECT ${s.notify('$11')}) AS n ORDER BY ins.id`,
    ),
    /**
     * One statement: lock ready pending rows and lapsed processing rows (SKIP
     * LOCKED, each branch walking its partial index), hand out the first $2 in
     * claim order with attempts+1, a fresh token and a deadline; lapsed rows
     * whose attempts are exhausted go dead instead and do not count.
     * $1 queue, $2 max, $3 visibility override ms (null = stamped), $4 worker id.
     */
    claim: s.def(
      'q_claim',
      // The clock is read once (t) and used as a scalar subquery, so each bound is an index
      // condition of its partial index instead of a join filter over every row of the queue.
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       pend AS (
         SELECT j.id, j.priority, j.run_at FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'pending' AND j.run_at <= (SELECT ms FROM t)
           AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t))
         ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED
       ),
       lapsed AS (
         SELECT j.id, j.priority, j.run_at FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= (SELECT ms FROM t)
           AND j.attempts < j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t))
         ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED
       ),
       picked AS (SELECT r.id FROM (SELECT * FROM pend UNION ALL SELECT * FROM lapsed) r ORDER BY r.priority DESC, r.run_at, r.id LIMIT $2::int),
       exhausted AS (
         SELECT j.id FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= (SELECT ms FROM t)
           AND j.attempts >= j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t))
         LIMIT 1000 FOR UPDATE OF j SKIP LOCKED
       ),
       buried AS (
         UPDATE ${jobs} j SET state = 'dead', last_error = 'max attempts exceeded', died_at = t.ms, ${CLEAR_CLAIM}
         FROM exhausted e, t WHERE j.id = e.id RETURNING j.id
       ),
       claimed AS (
         UPDATE ${jobs} j SET state = 'processing', attempts = j.attempts + 1, claim_token = gen_random_uuid(),
           claimed_until = t.ms + coalesce($3::bigint, j.visibility_timeout_ms), worker_id = $4::text
         FROM picked p, t WHERE j.id = p.id
         RETURNING ${jobColumns('j')}
       )
       SELECT c.*, (SELECT count(*) FROM buried) AS buried FROM claimed c ORDER BY c.priority DESC, c.run_at, c.id`,
    ),
    /** $1 id, $2 token. */
    ack: s.def('q_ack', `DELETE FROM ${jobs} j USING (SELECT ${NOW_MS} AS ms) t WHERE ${FENCE}`),
    /** $1 queue, $2 ids bigint[], $3 tokens uuid[]. */
    ackBatch: s.def(
      'q_ack_batch',
      // j.id = ANY($2) lets the primary key find the rows whatever the planner guesses of unnest.
      `DELETE FROM ${jobs} j USING unnest($2::bigint[], $3::text[]) AS x(id, token)
       WHERE j.id = ANY($2::bigint[]) AND j.id = x.id AND j.queue = $1::text AND j.claim_token::text = x.token
         AND j.state = 'processing' AND j.claimed_until > (SELECT ${NOW_MS})`,
    ),
    /** $1 id, $2 token, $3 delay ms, $4 last error, $5 wake payload → state. Dead when attempts are exhausted. */
    retry: s.def(
      'q_retry',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       u AS (
         UPDATE ${jobs} j SET
           state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'pending' END,
           run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at ELSE t.ms + $3::bigint END,
           died_at = CASE WHEN j.attempts >= j.max_attempts THEN t.ms ELSE NULL END,
           last_error = $4::text, ${CLEAR_CLAIM}
         FROM t WHERE ${FENCE} RETURNING j.state
       )
       SELECT u.state, CASE WHEN u.state = 'pending' THEN ${s.notify('$5')}::text END AS woke FROM u`,
    ),
    /** $1 id, $2 token, $3 last error. */
    fail: s.def(
      'q_fail',
      `UPDATE ${jobs} j SET state = 'dead', died_at = t.ms, last_error = $3::text, ${CLEAR_CLAIM}
       FROM (SELECT ${NOW_MS} AS ms) t WHERE ${FENCE}`,
    ),
    /** $1 id, $2 token, $3 extend ms → claimed_until. */
    heartbeat: s.def(
      'q_heartbeat',
      `UPDATE ${jobs} j SET claimed_until = t.ms + $3::bigint FROM (SELECT ${NOW_MS} AS ms) t WHERE ${FENCE} RETURNING j.claimed_until`,
    ),
    /** $1 id, $2 token, $3 wake payload. Gives the claim's attempt back. */
    release: s.def(
      'q_release',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       u AS (
         UPDATE ${jobs} j SET state = 'pending', run_at = t.ms, attempts = greatest(j.attempts - 1, 0), ${CLEAR_CLAIM}
         FROM t WHERE ${FENCE} RETURNING j.id
       )
       SELECT u.id, ${s.notify('$3')}::text AS woke FROM u`,
    ),
    /** $1 queue, $2 id. */
    cancel: s.def('q_cancel', `DELETE FROM ${jobs} WHERE queue = $1::text AND id = $2::bigint`),
    /** $1 queue, $2 id. */
    getJob: s.def('q_get', `SELECT ${jobColumns('j')} FROM ${jobs} j WHERE j.queue = $1::text AND j.id = $2::bigint`),
    /** $1 queue. */
    expire: s.def(
      'q_expire',
      `UPDATE ${jobs} j SET state = 'dead', last_error = 'expired', died_at = t.ms, ${CLEAR_CLAIM}
       FROM (SELECT ${NOW_MS} AS ms) t
       WHERE j.queue = $1::text AND j.state <> 'dead' AND j.expires_at IS NOT NULL AND j.expires_at <= t.ms`,
    ),
    /** $1 queue. */
    purgeRetained: s.def(
      'q_purge_retained',
      `DELETE FROM ${jobs} j USING (SELECT ${NOW_MS} AS ms) t
       WHERE j.queue = $1::text AND j.state = 'dead' AND j.dead_letter_retention_ms IS NOT NULL
         AND j.died_at + j.dead_letter_retention_ms <= t.ms`,
    ),
    /** $1 queue, $2 before (died_at <), $3 after (id >), $4 limit. */
    listDead: s.def(
      'q_list_dead',
      `SELECT ${jobColumns('j')} FROM ${jobs} j
       WHERE j.queue = $1::text AND j.state = 'dead'
         AND ($2::bigint IS NULL OR j.died_at < $2::bigint) AND ($3::bigint IS NULL OR j.id > $3::bigint)
       ORDER BY j.id LIMIT $4::int`,
    ),
    /** $1 queue, $2 ids, $3 wake payload → moved rows. */
    retryDead: s.def(
      'q_retry_dead',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       u AS (
         UPDATE ${jobs} j SET state = 'pending', attempts = 0, run_at = t.ms, died_at = NULL, ${CLEAR_CLAIM}
         FROM t WHERE j.queue = $1::text AND j.state = 'dead' AND j.id = ANY($2::bigint[]) RETURNING j.id
       )
       SELECT count(*) AS moved, CASE WHEN count(*) > 0 THEN ${s.notify('$3')}::text END AS woke FROM u`,
    ),
    /** $1 queue, $2 ids. */
    purgeDead: s.def('q_purge_dead', `DELETE FROM ${jobs} WHERE queue = $1::text AND state = 'dead' AND id = ANY($2::bigint[])`),
    /** $1 queue → pending, processing, dead, scheduled, oldest (counters, not a count of rows; counts.sql.ts). */
    stats: s.def('q_stats', queueStatsSql(s.q, NOW_MS)),
  } satisfies Record<string, Sql>;
}

export type QueueSql = ReturnType<typeof queueSql>;
