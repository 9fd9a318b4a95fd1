/** SQL of the queue mechanism (docs/semantics.md, Queues). `?` for now is the database clock read once per transaction. */

export const JOB_COLUMNS =
  'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, claimed_until, last_error, died_at';

/** queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at */
export const INSERT_JOB = `INSERT INTO __alkstore_jobs
  (queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at)
  VALUES (?, 'pending', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * Claim candidates of @queue at @now, at most @limit, in claim order. Two index
 * range scans (ready pending rows by the pending index, lapsed claims by the
 * processing index) merged, instead of one OR the planner cannot index.
 */
export const CLAIM_CANDIDATES = `
SELECT id, priority, run_at, attempts, max_attempts FROM (
  SELECT id, priority, run_at, attempts, max_attempts FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
  WHERE queue = @queue AND state = 'pending' AND run_at <= @now AND (expires_at IS NULL OR expires_at > @now)
  ORDER BY priority DESC, run_at, id LIMIT @limit)
UNION ALL
SELECT id, priority, run_at, attempts, max_attempts FROM (
  SELECT id, priority, run_at, attempts, max_attempts FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
  WHERE queue = @queue AND state = 'processing' AND claimed_until <= @now AND (expires_at IS NULL OR expires_at > @now)
  ORDER BY priority DESC, run_at, id LIMIT @limit)
ORDER BY priority DESC, run_at, id LIMIT @limit`;

/** @lease null = the stamped visibility timeout. */
export const CLAIM_ROW = `UPDATE __alkstore_jobs
  SET state = 'processing', attempts = attempts + 1, claim_token = @token, claimed_until = @now + coalesce(@lease, visibility_timeout_ms), worker_id = @worker
  WHERE id = @id
  RETURNING id, payload, priority, attempts, max_attempts, claimed_until, enqueued_at`;

export const TO_DEAD = `UPDATE __alkstore_jobs
  SET state = 'dead', last_error = @error, died_at = @now, claim_token = NULL, claimed_until = NULL
  WHERE id = @id`;

/** The handle-op validity predicate (docs/semantics.md): processing, our token, deadline not passed. */
const VALID = `id = @id AND claim_token = @token AND state = 'processing' AND claimed_until > @now`;

export const ACK = `DELETE FROM __alkstore_jobs WHERE ${VALID}`;
export const VALID_FOR_RETRY = `SELECT attempts, max_attempts, backoff_base_ms FROM __alkstore_jobs WHERE ${VALID}`;
export const TO_PENDING = `UPDATE __alkstore_jobs
  SET state = 'pending', run_at = @runAt, last_error = @error, claim_token = NULL, claimed_until = NULL, worker_id = NULL
  WHERE id = @id`;
export const HEARTBEAT = `UPDATE __alkstore_jobs SET claimed_until = @now + @extend WHERE ${VALID} RETURNING claimed_until`;
export const RELEASE = `UPDATE __alkstore_jobs
  SET state = 'pending', run_at = @now, attempts = max(attempts - 1, 0), claim_token = NULL, claimed_until = NULL, worker_id = NULL
  WHERE ${VALID}`;

export const CANCEL = 'DELETE FROM __alkstore_jobs WHERE id = ? AND queue = ?';
export const GET_JOB = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs WHERE id = ? AND queue = ?`;

export const EXPIRE = `UPDATE __alkstore_jobs
  SET state = 'dead', last_error = 'expired', died_at = @now, claim_token = NULL, claimed_until = NULL
  WHERE queue = @queue AND expires_at <= @now AND state <> 'dead'`;
export const PURGE_RETAINED = `DELETE FROM __alkstore_jobs
  WHERE queue = @queue AND state = 'dead' AND dead_letter_retention_ms IS NOT NULL AND died_at + dead_letter_retention_ms <= @now`;

/** @before null = any time. */
export const LIST_DEAD = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs
  WHERE queue = @queue AND state = 'dead' AND (@before IS NULL OR died_at < @before) AND id > @after
  ORDER BY id LIMIT @limit`;
export const RETRY_DEAD = `UPDATE __alkstore_jobs
  SET state = 'pending', attempts = 0, run_at = @now, died_at = NULL
  WHERE id = @id AND queue = @queue AND state = 'dead'`;
export const PURGE_DEAD = `DELETE FROM __alkstore_jobs WHERE id = ? AND queue = ? AND state = 'dead'`;
