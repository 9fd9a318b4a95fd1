/** SQL of the queue mechanism (docs/semantics.md, Queues). `?` for now is the database clock read once per transaction. */

export const JOB_COLUMNS =
  'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, claimed_until, last_error, died_at, headers, unique_key, ordering_key, concurrency_key, rate_key';

/** The columns a new pending job is inserted with, `INSERT_JOB`'s and (with `precounted`) {@link insertJobsSql}'s. */
const INSERT_JOB_COLUMNS =
  'queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key, blocked, concurrency_key, rate_key';
const INSERT_JOB_INTO = `INSERT INTO __alkstore_jobs
  (${INSERT_JOB_COLUMNS})`;

/** queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key, blocked */
export const INSERT_JOB = `${INSERT_JOB_INTO}
  VALUES (?, 'pending', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** The named values every row of {@link insertJobsSql} shares, in `INSERT_JOB`'s order without the payload. */
export const MULTI_ROW_SHARED = [
  'queue',
  'priority',
  'maxAttempts',
  'visibility',
  'backoff',
  'retention',
  'runAt',
  'now',
  'expiresAt',
  'headers',
  'uniqueKey',
  'orderingKey',
  'blocked',
  'concurrencyKey',
  'rateKey',
] as const;

/**
 * `INSERT_JOB` for `n` jobs that differ only in their payload: the shared values by the names of
 * {@link MULTI_ROW_SHARED}, the payloads as `@p0` … `@p<n-1>`. The rows get consecutive ids in
 * payload order (one statement under the write lock, AUTOINCREMENT). They go in `precounted`: the
 * insert trigger skips them, and the caller counts the batch with `COUNT_PLAIN_BATCH` (counts.sql.ts).
 */
export function insertJobsSql(n: number): string {
  const rows: string[] = [];
  for (let i = 0; i < n; i++)
    rows.push(
      `(@queue, 'pending', @p${i}, @priority, 0, @maxAttempts, @visibility, @backoff, @retention, @runAt, @now, @expiresAt, @headers, @uniqueKey, @orderingKey, @blocked, @concurrencyKey, @rateKey, 1)`,
    );
  return `INSERT INTO __alkstore_jobs
  (${INSERT_JOB_COLUMNS}, precounted)
  VALUES ${rows.join(', ')}`;
}

/** The live job holding a unique key: queue, key. */
export const LIVE_BY_UNIQUE_KEY = `SELECT id, state FROM __alkstore_jobs WHERE queue = ? AND unique_key = ? AND state IN ('pending', 'processing')`;
/** Debounce: payload, headers, run_at, id. */
export const REPLACE_PENDING = `UPDATE __alkstore_jobs SET payload = ?, headers = ?, run_at = ? WHERE id = ? AND state = 'pending'`;
/** Whether a live job holds an ordering key: queue, key. */
export const KEY_IS_LIVE = `SELECT 1 FROM __alkstore_jobs WHERE queue = ? AND ordering_key = ? AND state IN ('pending', 'processing') LIMIT 1`;
/** Whether the key has a head (a live job that is not blocked): queue, key. */
export const KEY_HAS_HEAD = `SELECT 1 FROM __alkstore_jobs WHERE queue = ? AND ordering_key = ? AND state IN ('pending', 'processing') AND blocked = 0 LIMIT 1`;
/** Makes the oldest live job of a key its head: queue, key. */
export const PROMOTE_OLDEST = `UPDATE __alkstore_jobs SET blocked = 0 WHERE id = (
  SELECT id FROM __alkstore_jobs WHERE queue = ? AND ordering_key = ? AND state IN ('pending', 'processing') ORDER BY id LIMIT 1) AND blocked = 1`;

/**
 * Claim candidates of @queue at @now, at most @limit, in claim order. Two index
 * range scans (ready pending rows by the pending index, lapsed claims by the
 * processing index) merged, instead of one OR the planner cannot index.
 * `+run_at` keeps run_at out of the index lookup: after ANALYZE, statistics of
 * one queue and one priority made a skip-scan with a run_at range look cheaper,
 * which then sorted every ready job (claim cost linear in the backlog; the
 * DEPTH bench and test/sqlite/claim-plan.test.ts).
 */
export const CLAIM_CANDIDATES = `
SELECT id, priority, run_at, attempts, max_attempts, ordering_key, 0 AS lapsed FROM (
  SELECT id, priority, run_at, attempts, max_attempts, ordering_key FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
  WHERE queue = @queue AND state = 'pending' AND blocked = 0 AND +run_at <= @now AND (expires_at IS NULL OR expires_at > @now)
  ORDER BY priority DESC, run_at, id LIMIT @limit)
UNION ALL
SELECT id, priority, run_at, attempts, max_attempts, ordering_key, 1 AS lapsed FROM (
  SELECT id, priority, run_at, attempts, max_attempts, ordering_key FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
  WHERE queue = @queue AND state = 'processing' AND claimed_until <= @now AND (expires_at IS NULL OR expires_at > @now)
  ORDER BY priority DESC, run_at, id LIMIT @limit)
ORDER BY priority DESC, run_at, id LIMIT @limit`;

/** Distinct priorities a short claim's next-due probe walks; past them a due job waits for the idle poll. */
const NEXT_DUE_PRIORITIES = 16;

/**
 * ms from @now to the earliest future run_at of @queue's claimable pending jobs (null for none), for
 * the worker's due timer (lib/internal/next-due.ts). A skip scan of the pending index: one probe per
 * distinct priority (at most NEXT_DUE_PRIORITIES) and one for its first future row.
 */
export const NEXT_DUE_IN = `WITH RECURSIVE pr(p, n) AS (
  SELECT (SELECT priority FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
          WHERE queue = @queue AND state = 'pending' AND blocked = 0 ORDER BY priority DESC LIMIT 1), 1
  UNION ALL
  SELECT (SELECT j.priority FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
          WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority < pr.p ORDER BY j.priority DESC LIMIT 1), pr.n + 1
  FROM pr WHERE pr.p IS NOT NULL AND pr.n < ${NEXT_DUE_PRIORITIES})
SELECT min((SELECT j.run_at FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
            WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority = pr.p AND j.run_at > @now ORDER BY j.run_at LIMIT 1)) - @now AS due_in
FROM pr WHERE pr.p IS NOT NULL`;

/**
 * Whether @queue already has a job a claim would take before (or with) a new job of @priority at @now
 * (`waiting` 1/0): a ready pending head of priority >= @priority (skip scan of the pending index, one
 * probe per distinct priority from the top, at most NEXT_DUE_PRIORITIES; past them it answers yes), or a
 * lapsed claim with attempts left (one probe of the processing index). Local hand-off then inserts the
 * new job pending, so it never overtakes a waiting job.
 */
export const CLAIMABLE_WAITING = `WITH RECURSIVE pr(p, n) AS (
  SELECT (SELECT priority FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
          WHERE queue = @queue AND state = 'pending' AND blocked = 0 ORDER BY priority DESC LIMIT 1), 1
  UNION ALL
  SELECT (SELECT j.priority FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
          WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority < pr.p ORDER BY j.priority DESC LIMIT 1), pr.n + 1
  FROM pr WHERE pr.p IS NOT NULL AND pr.p > @priority AND pr.n < ${NEXT_DUE_PRIORITIES})
SELECT EXISTS (SELECT 1 FROM pr WHERE pr.p >= @priority
    AND (pr.n >= ${NEXT_DUE_PRIORITIES} OR (SELECT j.run_at FROM __alkstore_jobs j INDEXED BY __alkstore_jobs_pending
         WHERE j.queue = @queue AND j.state = 'pending' AND j.blocked = 0 AND j.priority = pr.p ORDER BY j.run_at LIMIT 1) <= @now))
  OR EXISTS (SELECT 1 FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
    WHERE queue = @queue AND state = 'processing' AND claimed_until <= @now AND attempts < max_attempts) AS waiting`;

/** A claimed row in the shape of the shared `ClaimedRow` (lib/engines/shared/queue-driver.ts); `leaseMs` is the lease granted. */
const CLAIMED_ROW = `id, queue, payload AS payloadText, priority, attempts, max_attempts AS maxAttempts, claim_token AS claimToken, claimed_until AS deadline,
  coalesce(@lease, visibility_timeout_ms) AS leaseMs, enqueued_at AS enqueuedAt, headers AS headersText, unique_key AS uniqueKey, ordering_key AS orderingKey,
  backoff_base_ms AS backoffBaseMs, run_at AS runAt`;

/** What a claim sets on a row it takes, `token` its own claim token; @lease null = the stamped visibility timeout. */
const claimSet = (token: string): string =>
  `state = 'processing', attempts = attempts + 1, claim_token = ${token}, claimed_until = @now + coalesce(@lease, visibility_timeout_ms), worker_id = @worker,
    progress = NULL`;

/** The attempt starts with no progress (an earlier attempt's is not its own). */
export const CLAIM_ROW = `UPDATE __alkstore_jobs
  SET ${claimSet('@token')}
  WHERE id = @id
  RETURNING ${CLAIMED_ROW}`;

/**
 * CLAIM_ROW for every row of @items (JSON `[[id, token], …]`, each with its own token) in one
 * statement: one lookup by id per item. RETURNING's order is not the items' order.
 */
export const CLAIM_ROWS = `UPDATE __alkstore_jobs
  SET ${claimSet('c.tok')}
  FROM (SELECT json_extract(value, '$[0]') AS cid, json_extract(value, '$[1]') AS tok FROM json_each(@items)) AS c
  WHERE __alkstore_jobs.id = c.cid
  RETURNING ${CLAIMED_ROW}`;

export const TO_DEAD = `UPDATE __alkstore_jobs
  SET state = 'dead', last_error = @error, died_at = @now, claim_token = NULL, claimed_until = NULL
  WHERE id = @id`;

/** The fence of a handle op beyond the row and its token (docs/semantics.md): still processing, deadline not passed. */
const CLAIM_LIVE = `state = 'processing' AND claimed_until > @now`;
/** The handle-op validity predicate: processing, our token, deadline not passed. */
const VALID = `id = @id AND claim_token = @token AND ${CLAIM_LIVE}`;

/** Rows that leave the live states report their ordering key and whether they were blocked (a head's end promotes the next). */
export const ACK = `DELETE FROM __alkstore_jobs WHERE ${VALID} RETURNING ordering_key, blocked`;
/** ACK for a job known to have no ordering key (a claimed handle says so): no RETURNING to read. */
export const ACK_PLAIN = `DELETE FROM __alkstore_jobs WHERE ${VALID}`;
/**
 * ACK_PLAIN for every claim of @items (JSON `[[id, token], …]`) in one statement, each fenced as a
 * single ack is: its own token, still processing, lease not passed. The fence's terms carry a unary
 * `+` so that no index serves them: after an ANALYZE taken while few jobs were processing, the
 * planner otherwise scans the processing index (every job in flight, for each batch) instead of
 * looking the items up by id (test/sqlite/ack-plan.test.ts).
 */
export const ACK_PLAIN_ROWS = `DELETE FROM __alkstore_jobs
  WHERE (id, claim_token) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@items))
    AND +state = 'processing' AND +claimed_until > @now`;
/** ACK_PLAIN_ROWS for claims that may hold ordering keys: what each deleted row needs to promote its key's next job. */
export const ACK_ROWS = `${ACK_PLAIN_ROWS} RETURNING ordering_key, blocked`;
/**
 * PROMOTE_OLDEST for each key of @keys (JSON array) of @queue that has no head (KEY_HAS_HEAD), in one
 * statement: the oldest live job of each such key becomes its head.
 */
export const PROMOTE_KEYS = `UPDATE __alkstore_jobs SET blocked = 0 WHERE blocked = 1 AND id IN (
  SELECT (SELECT j.id FROM __alkstore_jobs j
          WHERE j.queue = @queue AND j.ordering_key = k.value AND j.state IN ('pending', 'processing') ORDER BY j.id LIMIT 1)
  FROM json_each(@keys) k
  WHERE NOT EXISTS (SELECT 1 FROM __alkstore_jobs h
    WHERE h.queue = @queue AND h.ordering_key = k.value AND h.state IN ('pending', 'processing') AND h.blocked = 0))`;
export const VALID_FOR_RETRY = `SELECT attempts, max_attempts, ordering_key, worker_id, claimed_until - visibility_timeout_ms AS claimed_at FROM __alkstore_jobs WHERE ${VALID}`;
/** The attempt a retry / fail ends (step 14), in the same write; a redriven job's numbers start over, so a repeat number overwrites. */
export const RECORD_ATTEMPT = `INSERT INTO __alkstore_job_attempts (job_id, queue, attempt, worker_id, claimed_at, ended_at, outcome, error)
  VALUES (@id, @queue, @attempt, @worker, @claimedAt, @now, @outcome, @error)
  ON CONFLICT (job_id, attempt) DO UPDATE SET worker_id = excluded.worker_id, claimed_at = excluded.claimed_at,
    ended_at = excluded.ended_at, outcome = excluded.outcome, error = excluded.error`;
/**
 * The attempt a claim ends when it takes over (@outcome 'lapsed') or dead-letters ('dead') a job whose
 * lease lapsed, read from the row before the claim writes it: its number, worker, claim time and its
 * lease deadline as the end. Only lapsed candidates run it, so a claim of pending jobs costs nothing.
 * A row of that very lapse written by the dead worker sweep (liveness.ts) keeps its claim time, read
 * before the sweep moved the deadline.
 */
export const RECORD_LAPSED = `INSERT INTO __alkstore_job_attempts (job_id, queue, attempt, worker_id, claimed_at, ended_at, outcome, error)
  SELECT id, queue, attempts, worker_id, claimed_until - visibility_timeout_ms, claimed_until, @outcome, @error FROM __alkstore_jobs WHERE id = @id
  ON CONFLICT (job_id, attempt) DO UPDATE SET worker_id = excluded.worker_id,
    claimed_at = CASE WHEN __alkstore_job_attempts.outcome = 'lapsed' AND __alkstore_job_attempts.ended_at = excluded.ended_at
      AND __alkstore_job_attempts.worker_id IS excluded.worker_id THEN __alkstore_job_attempts.claimed_at ELSE excluded.claimed_at END,
    ended_at = excluded.ended_at, outcome = excluded.outcome, error = excluded.error`;
/** Attempt rows of up to 1000 jobs of @queue gone from both jobs and outcomes (the sweep). */
export const PRUNE_ATTEMPTS = `DELETE FROM __alkstore_job_attempts WHERE queue = @queue AND job_id IN (
  SELECT DISTINCT a.job_id FROM __alkstore_job_attempts a WHERE a.queue = @queue
    AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs j WHERE j.id = a.job_id)
    AND NOT EXISTS (SELECT 1 FROM __alkstore_job_outcomes o WHERE o.id = a.job_id)
  LIMIT 1000)`;
/** A retry: back to pending without the ended attempt's progress. */
export const TO_PENDING = `UPDATE __alkstore_jobs
  SET state = 'pending', run_at = @runAt, last_error = @error, claim_token = NULL, claimed_until = NULL, worker_id = NULL, progress = NULL
  WHERE id = @id`;
export const HEARTBEAT = `UPDATE __alkstore_jobs SET claimed_until = @now + @extend WHERE ${VALID} RETURNING claimed_until`;
export const RELEASE = `UPDATE __alkstore_jobs
  SET state = 'pending', run_at = @now, attempts = max(attempts - 1, 0), claim_token = NULL, claimed_until = NULL, worker_id = NULL
  WHERE ${VALID}`;

export const CANCEL = 'DELETE FROM __alkstore_jobs WHERE id = ? AND queue = ? RETURNING ordering_key, blocked';
export const GET_JOB_BY_KEY = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs WHERE queue = ? AND unique_key = ? AND state IN ('pending', 'processing')`;

export const EXPIRE = `UPDATE __alkstore_jobs
  SET state = 'dead', last_error = 'expired', died_at = @now, claim_token = NULL, claimed_until = NULL
  WHERE queue = @queue AND expires_at <= @now AND state <> 'dead'
  RETURNING ordering_key, blocked`;
export const PURGE_RETAINED = `DELETE FROM __alkstore_jobs
  WHERE queue = @queue AND state = 'dead' AND dead_letter_retention_ms IS NOT NULL AND died_at + dead_letter_retention_ms <= @now`;

/** @before null = any time. */
export const LIST_DEAD = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs
  WHERE queue = @queue AND state = 'dead' AND (@before IS NULL OR died_at < @before) AND id > @after
  ORDER BY id LIMIT @limit`;
/** Ordered jobs rejoin their key blocked; the key's head is then re-decided. */
/** A dead job back to pending, unless a live job holds its unique key (then nothing: see DEAD_KEY_HELD). */
export const RETRY_DEAD = `UPDATE __alkstore_jobs
  SET state = 'pending', attempts = 0, run_at = @now, died_at = NULL, blocked = (ordering_key IS NOT NULL)
  WHERE id = @id AND queue = @queue AND state = 'dead'
    AND (unique_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM __alkstore_jobs l WHERE l.queue = @queue AND l.unique_key = __alkstore_jobs.unique_key AND l.state IN ('pending', 'processing')))
  RETURNING ordering_key`;
/** After RETRY_DEAD changed nothing: 1 when the job is dead with a unique key (a live job holds it). */
export const DEAD_KEY_HELD = `SELECT 1 FROM __alkstore_jobs WHERE id = @id AND queue = @queue AND state = 'dead' AND unique_key IS NOT NULL`;
export const PURGE_DEAD = `DELETE FROM __alkstore_jobs WHERE id = ? AND queue = ? AND state = 'dead'`;

/** Queue settings (pause, rate limit and its window). */
export const GET_SETTINGS = `SELECT paused, rate_max, rate_per_ms, window_start, window_count, keyed, concurrency_limit, global_concurrency, key_rate_max, key_rate_per_ms FROM __alkstore_queue_settings WHERE queue = ?`;
export const SET_PAUSED = `INSERT INTO __alkstore_queue_settings (queue, paused) VALUES (?, ?)
  ON CONFLICT (queue) DO UPDATE SET paused = excluded.paused`;
export const SET_RATE_LIMIT = `INSERT INTO __alkstore_queue_settings (queue, rate_max, rate_per_ms) VALUES (?, ?, ?)
  ON CONFLICT (queue) DO UPDATE SET rate_max = excluded.rate_max, rate_per_ms = excluded.rate_per_ms, window_start = 0, window_count = 0`;
export const SET_WINDOW = `UPDATE __alkstore_queue_settings SET window_start = ?, window_count = ? WHERE queue = ?`;

/**
 * Local hand-off (lib/internal/handoff.ts): a plain job inserted already claimed by @worker,
 * attempts 1, deadline @now + coalesce(@lease, visibility). The counter triggers count it as processing.
 * Named parameters of `INSERT_JOB`'s columns (@runAt at or before @now) plus @token, @worker, @lease, and
 * @orderingKey (null for a plain job; a keyed job goes in as its key's head: the caller checked no job of
 * the key is live).
 */
export const INSERT_CLAIMED_JOB = `INSERT INTO __alkstore_jobs
  (queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers,
   claim_token, claimed_until, worker_id, ordering_key)
  VALUES (@queue, 'processing', @payload, @priority, 1, @maxAttempts, @visibility, @backoff, @retention, @runAt, @now, @expiresAt, @headers,
   @token, @now + coalesce(@lease, @visibility), @worker, @orderingKey)
  RETURNING ${CLAIMED_ROW}`;

// Results, progress and cancellation (SPEC §11, step 10): an outcome record is inserted from the job
// row in the write transaction that deletes it. Plain acks do not come here.

const OUTCOME_COLS =
  'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key, result, progress, finished_at, keep_until';
const OUTCOME_FROM_JOB = `id, queue, @state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key`;

/** The completed record of a claimed job still ours (@id, @token, @now), with @result, @progress (null: the row's) and @keepUntil. */
export const RECORD_COMPLETED = `INSERT INTO __alkstore_job_outcomes (${OUTCOME_COLS})
  SELECT ${OUTCOME_FROM_JOB}, @result, coalesce(@progress, progress), @now, @keepUntil FROM __alkstore_jobs WHERE ${VALID}`;
/** The cancelled record of a live job @id of @queue (progress kept). */
export const RECORD_CANCELLED = `INSERT INTO __alkstore_job_outcomes (${OUTCOME_COLS})
  SELECT ${OUTCOME_FROM_JOB}, NULL, progress, @now, @keepUntil FROM __alkstore_jobs WHERE id = @id AND queue = @queue AND state IN ('pending', 'processing')`;
/** The state of job @id of @queue (live or dead), for a cancel. */
export const JOB_STATE = `SELECT state FROM __alkstore_jobs WHERE id = ? AND queue = ?`;
/** Live jobs of an ordering key, in id order: queue, key. */
export const LIVE_OF_ORDERING_KEY = `SELECT id, state FROM __alkstore_jobs WHERE queue = ? AND ordering_key = ? AND state IN ('pending', 'processing') ORDER BY id`;
/** The live job holding a unique key, with its state: queue, key. */
export const LIVE_OF_UNIQUE_KEY = `SELECT id, state FROM __alkstore_jobs WHERE queue = ? AND unique_key = ? AND state IN ('pending', 'processing')`;
/** A fenced progress write: @progress on a claim still ours. */
export const WRITE_PROGRESS = `UPDATE __alkstore_jobs SET progress = @progress WHERE ${VALID}`;
/** The job @id of @queue: live or dead row with progress, else its outcome record. */
export const GET_JOB_FULL = `SELECT ${JOB_COLUMNS}, progress, NULL AS result, NULL AS finished_at FROM __alkstore_jobs WHERE id = @id AND queue = @queue
  UNION ALL
  SELECT id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at,
    expires_at, NULL, NULL, NULL, headers, unique_key, ordering_key, NULL, NULL, progress, result, finished_at
  FROM __alkstore_job_outcomes WHERE id = @id AND queue = @queue`;
/** Of the ids in JSON array @ids, those of @queue recorded cancelled. */
export const CANCELLED_AMONG = `SELECT o.id FROM json_each(@ids) x JOIN __alkstore_job_outcomes o ON o.id = x.value
  WHERE o.queue = @queue AND o.state = 'cancelled' ORDER BY o.id`;
/** Outcome records of @queue past their retention at @now. */
export const PURGE_OUTCOMES = `DELETE FROM __alkstore_job_outcomes WHERE queue = @queue AND keep_until IS NOT NULL AND keep_until <= @now`;
