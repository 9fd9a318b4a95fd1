import { countDeltas, dueBucket, foldSometimes, queueStatsSql } from './counts.sql.js';
import { NOW_MS, quoteLiteral, type SchemaSql, type Sql } from './schema-sql.js';
import type { JobColumns } from '../shared/rows.js';

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
    `${a}headers::text AS headers`,
    `${a}unique_key`,
    `${a}ordering_key`,
    `${a}concurrency_key`,
    `${a}rate_key`,
  ].join(', ');
}

/** A job row as selected by {@link jobColumns}; int8 columns are strings. */
export interface JobRow extends JobColumns<string> {
  state: 'pending' | 'processing' | 'dead';
  claim_token: string | null;
}

// Handle ops are fenced by token and deadline: state='processing' AND token AND claimed_until > now. The
// state is compared in a form no index serves, so the job is read by primary key: statistics taken while
// few jobs were processing make the processing index look free, and reading it found the job only after
// every other job in flight (as `ackFence`).
const FENCE = `j.id = $1::bigint AND j.claim_token::text = $2::text AND j.state || '' = 'processing' AND j.claimed_until > t.ms`;
const CLEAR_CLAIM = 'claim_token = NULL, claimed_until = NULL, worker_id = NULL';
/** What a statement that ends jobs' live life returns for {@link promoteFrom}. */
export const FINISHED = 'j.id, j.queue, j.ordering_key, j.blocked';
/**
 * What a retry / fail statement returns about the attempt it ends, read from the pre-update row `o`
 * (the same row joined to itself): its number, worker, claim time (the deadline minus the lease,
 * docs/operations.md) and end time.
 */
const ENDED_ATTEMPT =
  'j.attempts AS a_attempt, o.worker_id AS a_worker, o.claimed_until - o.visibility_timeout_ms AS a_claimed_at, t.ms AS a_ended_at';

/** INSERT of the failed attempt (migration 14) from CTE `from` (returning {@link ENDED_ATTEMPT}); a redriven job's attempt numbers start over, so a repeat number overwrites. */
function recordAttempt(q: string, from: string, outcome: string, error: string): string {
  return `INSERT INTO ${q}.job_attempts (job_id, queue, attempt, worker_id, claimed_at, ended_at, outcome, error)
         SELECT ${from}.id, ${from}.queue, ${from}.a_attempt, ${from}.a_worker, ${from}.a_claimed_at, ${from}.a_ended_at, ${outcome}, ${error} FROM ${from}
         ON CONFLICT (job_id, attempt) DO UPDATE SET worker_id = excluded.worker_id, claimed_at = excluded.claimed_at,
           ended_at = excluded.ended_at, outcome = excluded.outcome, error = excluded.error`;
}

/**
 * The attempt a claim's lapsed pick or burial ends (docs/operations.md, Failed attempts), read from
 * the row before the claim writes it: its number, worker, claim time (as {@link ENDED_ATTEMPT}) and
 * its lease deadline as the end.
 */
export const LAPSED_ATTEMPT =
  'j.attempts AS a_attempt, j.worker_id AS a_worker, j.claimed_until - j.visibility_timeout_ms AS a_claimed_at, j.claimed_until AS a_ended_at';

/**
 * Whether the job row `alias` may be ended by a statement that ends jobs of several ordering keys:
 * it has no key, or its key's lock was free and is now held by this transaction
 * (`ordering_try_lock`, migration 21). Such a statement never waits for a key: the jobs of keys
 * held elsewhere (a producer's open transaction) are left for a later statement, so no cycle
 * through key locks can include it, whatever order the producers take their keys in. Tested
 * before the row is locked; a lock taken for a row that is then skipped is only held a little
 * longer than needed.
 */
function keyTaken(s: SchemaSql, alias: string): string {
  return `(${alias}.ordering_key IS NULL OR ${s.q}.ordering_try_lock(${alias}.queue, ${alias}.ordering_key))`;
}

/**
 * CTE `lk` of a statement that ends one job (or the jobs of one key): the lock of the ordering key
 * `keys` yields (a query of one row of queue and key; a null key takes nothing), taken before the
 * statement touches any row; {@link KEY_FIRST} makes the statement wait for it. So while it waits for
 * a key it holds no other key and no row a producer could be waiting on (an enqueue whose unique key
 * a job being ended holds waits for that row), and no cycle can include it. `promoteFrom` then finds
 * the lock held.
 */
function keyFirst(s: SchemaSql, keys: string): string {
  return `lk AS MATERIALIZED (SELECT ${s.q}.ordering_lock(x.queue, x.key) FROM (${keys}) AS x(queue, key) WHERE x.key IS NOT NULL)`;
}

/** For {@link keyFirst}: the queue and ordering key of the job row `where` selects from `k` (read, not locked). */
function keyOf(s: SchemaSql, where: string): string {
  return `SELECT k.queue, k.ordering_key FROM ${s.q}.jobs k WHERE ${where}`;
}

/** The condition that runs {@link keyFirst}'s `lk` before the first row is read (no column: evaluated once, up front). */
const KEY_FIRST = '(SELECT count(*) FROM lk) >= 0';

/**
 * The claim statements' `exhausted` and `buried` CTEs (queue $1): lapsed jobs out of attempts, locked
 * and dead-lettered; a job whose ordering key another transaction holds waits for a later claim
 * ({@link keyTaken}). `now` is the SQL expression of the statement's clock.
 */
export function buryExhausted(s: SchemaSql, now: string): string {
  const jobs = `${s.q}.jobs`;
  return `exhausted AS (
         SELECT j.id, ${LAPSED_ATTEMPT} FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= ${now}
           AND j.attempts >= j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > ${now}) AND ${keyTaken(s, 'j')}
         LIMIT 1000 FOR UPDATE OF j SKIP LOCKED
       ),
       buried AS (
         UPDATE ${jobs} j SET state = 'dead', last_error = 'max attempts exceeded', died_at = t.ms, ${CLEAR_CLAIM}
         FROM exhausted e, t WHERE j.id = e.id RETURNING j.id, j.queue, j.ordering_key, j.blocked
       )`;
}

/**
 * The claim statements' `claimed`, `cnt` and `windowed` CTEs (queue $1, lease $3, worker $4): the
 * `picked` rows claimed, the counter deltas with `buried`, and the queue's rate window advanced.
 */
export function claimPicked(s: SchemaSql, jobs: string, settings: string): string {
  return `claimed AS (
         UPDATE ${jobs} j SET state = 'processing', attempts = j.attempts + 1, claim_token = gen_random_uuid(), progress = NULL,
           claimed_until = greatest(t.ms, (SELECT win FROM qr)) + coalesce($3::bigint, j.visibility_timeout_ms), worker_id = $4::text
         FROM picked p, t WHERE j.id = p.id
         RETURNING ${jobColumns('j')}, p.fresh
       ),
       cnt AS (${countDeltas(
         s.q,
         `SELECT $1::text, v.state, 0, v.n
          FROM (SELECT count(*) FILTER (WHERE c.fresh) AS f FROM claimed c) a, (SELECT count(*) AS b FROM buried) b,
            LATERAL (VALUES ('pending', -a.f), ('processing', a.f - b.b), ('dead', b.b)) AS v(state, n)
          WHERE v.n <> 0`,
       )}),
       windowed AS (
         UPDATE ${settings} qw SET window_start = qr.win,
           window_count = CASE WHEN qr.window_start = qr.win THEN qr.window_count ELSE 0 END + (SELECT count(*) FROM claimed)
         FROM qr WHERE qw.queue = $1::text RETURNING 1
       )`;
}

/**
 * Whether the attempt row in the way of a lapsed attempt's insert is that very lapse, recorded when
 * the dead worker sweep ended the lease (liveness.ts `reap`): then its claim time, read before the
 * sweep moved the deadline, is kept (the deadline minus the lease would now say the lease ended at
 * the sweep, and put the claim a whole lease earlier).
 */
export const SAME_LAPSE = `(job_attempts.outcome = 'lapsed' AND job_attempts.ended_at = excluded.ended_at
             AND job_attempts.worker_id IS NOT DISTINCT FROM excluded.worker_id)`;

/**
 * INSERT of the attempts a claim statement ends without a retry or fail (queue $1): `from` is a
 * query returning `id` and {@link LAPSED_ATTEMPT}'s columns plus `outcome` and `error`. It reads only
 * lapsed picks and buried rows, so a claim of pending jobs inserts nothing. A lapsed attempt is stored
 * as `lapsed` with a null error.
 */
export function recordLapsed(q: string, from: string): string {
  return `INSERT INTO ${q}.job_attempts (job_id, queue, attempt, worker_id, claimed_at, ended_at, outcome, error)
         SELECT x.id, $1::text, x.a_attempt, x.a_worker, x.a_claimed_at, x.a_ended_at, x.outcome, x.error FROM (${from}) x
         ON CONFLICT (job_id, attempt) DO UPDATE SET worker_id = excluded.worker_id,
           claimed_at = CASE WHEN ${SAME_LAPSE} THEN job_attempts.claimed_at ELSE excluded.claimed_at END,
           ended_at = excluded.ended_at, outcome = excluded.outcome, error = excluded.error`;
}

/**
 * Selects, from CTE `d` (rows that just left the live states, with queue,
 * ordering_key, blocked), the number of keys whose next job became head. Keys
 * whose finished rows were all blocked need nothing. All keys go to one
 * `ordering_next_keys` call (migration 32), with every finished id, after `d`
 * was read in full; none when no key needs it. Every statement that uses it
 * took the keys of `d` before ending their rows ({@link keyFirst},
 * {@link keyTaken}), so the promotion finds each lock held and never waits.
 */
export function promoteFrom(s: SchemaSql, d: string, wakeParam: string): string {
  return `coalesce((
    SELECT ${s.q}.ordering_next_keys(array_agg(g.queue), array_agg(g.ordering_key),
      (SELECT array_agg(${d}.id) FROM ${d} WHERE ${d}.ordering_key IS NOT NULL), ${s.channel}, ${wakeParam}::text)
    FROM (
      SELECT ${d}.queue, ${d}.ordering_key FROM ${d} WHERE ${d}.ordering_key IS NOT NULL
      GROUP BY ${d}.queue, ${d}.ordering_key HAVING bool_or(NOT ${d}.blocked)) g
    HAVING count(*) > 0), 0)`;
}

/**
 * Counter deltas (counts.sql.ts) of CTE `d`, rows that left the live states of
 * queue $1 from state `from` (processing or dead rows: bucket 0): -count(*).
 */
function minusAll(s: SchemaSql, d: string, from: 'processing' | 'dead'): string {
  return countDeltas(s.q, `SELECT $1::text, '${from}', 0, -count(*) FROM ${d} HAVING count(*) > 0`);
}

/**
 * Counter deltas of CTE `d`, one row per job moved out of `from` (bucket 0)
 * into state `d.state` at `d.run_at` (new image; clock `t.ms`), with `d.queue`.
 */
function moved(s: SchemaSql, d: string, from: 'processing' | 'dead'): string {
  return countDeltas(
    s.q,
    `SELECT x.queue, x.state, x.b, sum(x.n) FROM (
       SELECT ${d}.queue, '${from}' AS state, 0::bigint AS b, -1 AS n FROM ${d}
       UNION ALL
       SELECT ${d}.queue, ${d}.state, ${dueBucket(`${d}.state`, `${d}.run_at`, 't.ms')}, 1 FROM ${d}, t
     ) x GROUP BY x.queue, x.state, x.b HAVING sum(x.n) <> 0`,
  );
}

/** Counter deltas of CTE `d`, deleted rows (old image: queue, state, run_at; clock `t.ms`). */
function deleted(s: SchemaSql, d: string): string {
  return countDeltas(
    s.q,
    `SELECT ${d}.queue, ${d}.state, ${dueBucket(`${d}.state`, `${d}.run_at`, 't.ms')} AS b, -count(*) FROM ${d}, t GROUP BY 1, 2, 3`,
  );
}

/**
 * CTE `sc` of a claim: when the parameter is true, the claim's own (implicit)
 * transaction commits with `synchronous_commit = off` — `set_config(…, true)`
 * lasts until the end of the transaction, so nothing else on the pooled
 * connection is affected. The statement must reference `sc` so it runs.
 * (`claimDurability: 'deferred'`.)
 */
export function DEFERRED_COMMIT(param: string): string {
  return `sc AS MATERIALIZED (SELECT CASE WHEN ${param}::boolean THEN set_config('synchronous_commit', 'off', true) END AS v)`;
}

/** Distinct priorities a short claim's next-due probe walks; past them a due job waits for the idle poll. */
const NEXT_DUE_PRIORITIES = 16;

/**
 * Scalar subquery: ms from `nowMs` to the earliest future `run_at` of queue $1's claimable pending jobs
 * (null for none), for the worker's due timer (lib/internal/next-due.ts). A skip scan of the pending
 * index: one probe per distinct priority (at most {@link NEXT_DUE_PRIORITIES}) and one for its first future row.
 */
export function nextDueIn(s: SchemaSql, nowMs: string): string {
  const jobs = `${s.q}.jobs`;
  const live = `j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked`;
  return `(WITH RECURSIVE pr(p, n) AS (
      (SELECT j.priority, 1 FROM ${jobs} j WHERE ${live} ORDER BY j.priority DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT j.priority FROM ${jobs} j WHERE ${live} AND j.priority < pr.p ORDER BY j.priority DESC LIMIT 1), pr.n + 1
      FROM pr WHERE pr.p IS NOT NULL AND pr.n < ${NEXT_DUE_PRIORITIES})
    SELECT min((SELECT j.run_at FROM ${jobs} j WHERE ${live} AND j.priority = pr.p AND j.run_at > ${nowMs} ORDER BY j.run_at LIMIT 1)) - ${nowMs}
    FROM pr WHERE pr.p IS NOT NULL)`;
}

/**
 * Boolean subquery for the hand-off statement: whether queue $1 (`queue`) already has a job a claim would
 * take before (or with) a new job of priority $3 (`priority`) at `nowMs`: a ready pending head of priority >= $3 (a skip
 * scan of the pending index, one probe per distinct priority from the top, at most
 * {@link NEXT_DUE_PRIORITIES}; past them it answers yes), or a lapsed claim with attempts left (one probe
 * of the processing index). Then the new job is inserted pending, so it never overtakes a waiting job.
 */
export function claimableWaiting(s: SchemaSql, nowMs: string, queue = '$1::text', priority = '$3::int'): string {
  const jobs = `${s.q}.jobs`;
  const live = `j.queue = ${queue} AND j.state = 'pending' AND NOT j.blocked`;
  return `(EXISTS (WITH RECURSIVE pr(p, n) AS (
      (SELECT j.priority, 1 FROM ${jobs} j WHERE ${live} ORDER BY j.priority DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT j.priority FROM ${jobs} j WHERE ${live} AND j.priority < pr.p ORDER BY j.priority DESC LIMIT 1), pr.n + 1
      FROM pr WHERE pr.p IS NOT NULL AND pr.p > ${priority} AND pr.n < ${NEXT_DUE_PRIORITIES})
    SELECT 1 FROM pr WHERE pr.p >= ${priority}
      AND (pr.n >= ${NEXT_DUE_PRIORITIES} OR (SELECT j.run_at FROM ${jobs} j WHERE ${live} AND j.priority = pr.p ORDER BY j.run_at LIMIT 1) <= ${nowMs}))
    OR EXISTS (SELECT 1 FROM ${jobs} j WHERE j.queue = ${queue} AND j.state = 'processing' AND j.claimed_until <= ${nowMs} AND j.attempts < j.max_attempts))`;
}

/**
 * {@link claimableWaiting} for a hand-off to a worker whose claims follow a watermark ($15 priority,
 * $16 run_at; `ClaimGate`): whether a ready pending job of priority >= $3 waits where the worker's
 * next claim (`claimAfter`) would read, in the same three index ranges (above the watermark's
 * priority, its own from its `run_at` on, below it), so it does not walk the dead index entries of the
 * jobs claimed before. No lapsed probe: like that claim, lapsed leases and jobs made ready behind the
 * watermark wait for the full claim (at most `CLAIM_SWEEP_MS`).
 */
function claimableWaitingAfter(s: SchemaSql, nowMs: string): string {
  const jobs = `${s.q}.jobs`;
  const ready = `j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.run_at <= ${nowMs}`;
  return `(EXISTS (SELECT 1 FROM ${jobs} j WHERE ${ready} AND j.priority > $15::int AND j.priority >= $3::int)
    OR ($15::int >= $3::int AND EXISTS (SELECT 1 FROM ${jobs} j WHERE ${ready} AND j.priority = $15::int AND j.run_at >= $16::bigint))
    OR EXISTS (SELECT 1 FROM ${jobs} j WHERE ${ready} AND j.priority < $15::int AND j.priority >= $3::int))`;
}

/** The largest job JSON a cross-process hand-off's NOTIFY carries (its payload limit is 8,000 bytes); larger ones go as id and token. */
const REMOTE_NOTIFY_BYTES = 7_800;

/** Queue statements for one schema. Every instant comes from the database clock. */
/** The lapsed picks and buried rows of `claim` for {@link recordLapsed}. */
const LAPSED_FROM = `SELECT l.id, l.a_attempt, l.a_worker, l.a_claimed_at, l.a_ended_at, 'lapsed' AS outcome, NULL::text AS error FROM lapsed l JOIN picked p ON p.id = l.id
         UNION ALL SELECT e.id, e.a_attempt, e.a_worker, e.a_claimed_at, e.a_ended_at, 'dead', 'max attempts exceeded' FROM exhausted e`;

/**
 * The fence of a batched ack of the job row `j` of queue `queue` (SQL text) by the pair `x` (id, token):
 * still claimed by that token, its claim not lapsed. `ids` (an array parameter holding every id the
 * statement acks): j.id = ANY(ids) lets the primary key find the rows whatever the planner guesses of
 * `x`, and it is the only condition an index can serve: the rest is written so that no index matches it
 * (`|| ''`, `- now > 0`). Otherwise the generic plan reads the processing index (queue, claimed_until >
 * now), whose range holds an entry of every job claimed within a lease, and while an old snapshot holds
 * the xmin horizon those dead entries all stay (B12).
 */
export function ackFence(queue: string, ids: string): string {
  return `j.id = ANY(${ids}) AND j.id = x.id AND j.queue || '' = ${queue} AND j.claim_token::text = x.token
           AND j.state || '' = 'processing' AND j.claimed_until - (SELECT ${NOW_MS}) > 0`;
}

/**
 * CTEs `d` and `cnt` of a batched ack of queue `queue` (SQL text): `d`, the jobs of `pairs` (a FROM item
 * `x` of columns id and token) within {@link ackFence}, deleted, RETURNING `returning`; with `keys`, only
 * those whose ordering key the statement could take ({@link keyTaken}: a key another transaction holds
 * is not waited for). `cnt`: their counter deltas.
 */
export function ackedJobs(
  s: SchemaSql,
  queue: string,
  ids: string,
  pairs: string,
  returning: string,
  keys: boolean,
): string {
  return `d AS (
         DELETE FROM ${s.q}.jobs j USING ${pairs}
         WHERE ${ackFence(queue, ids)}${keys ? ` AND ${keyTaken(s, 'j')}` : ''}
         RETURNING ${returning}),
       cnt AS (${countDeltas(s.q, `SELECT ${queue}, 'processing', 0, -count(*) FROM d HAVING count(*) > 0`)})`;
}

export function queueSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  // The batched acks (ackBatchPlain, ackBatch and the like): see ackFence and ackedJobs.
  const batchFence = ackFence('$1::text', '$2::bigint[]');
  const ackedBatch = (returning: string, keys = false): string =>
    ackedJobs(s, '$1::text', '$2::bigint[]', 'unnest($2::bigint[], $3::text[]) AS x(id, token)', returning, keys);
  const settings = `${s.q}.queue_settings`;
  // A ready pending row of queue $1 without limit keys, at clock t (claimAfter).
  const readyPlain = `j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.run_at <= (SELECT ms FROM t)
           AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t)) AND j.concurrency_key IS NULL AND j.rate_key IS NULL`;
  const insertCols =
    'queue, payload, priority, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers';
  // $3..$10: priority, max_attempts, visibility, backoff base, retention, delayMs, runAtMs, expiresInMs
  const stampValues = `$3::int, $4::int, $5::bigint, $6::bigint, $7::bigint,
    CASE WHEN $8::bigint IS NOT NULL THEN t.ms + $8::bigint ELSE coalesce($9::bigint, t.ms) END,
    t.ms, t.ms + $10::bigint, $12::text::json`;
  // The wake is built from the queue name in SQL by neither path: callers pass it ($11).
  const fnArgs = `$3::int, $4::int, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint, ${s.channel}, $11::text, $12::text, $13::text, $14::boolean, $15::text`;
  // expire: rows of queue $1 in state `from` whose time is up go dead (a row whose ordering key another
  // transaction holds is left to the next sweep, see keyTaken).
  const expireFrom = (
    from: 'pending' | 'processing',
  ) => `UPDATE ${jobs} j SET state = 'dead', last_error = 'expired', died_at = t.ms, ${CLEAR_CLAIM}
    FROM t WHERE j.queue = $1::text AND j.state = '${from}' AND j.expires_at IS NOT NULL AND j.expires_at <= t.ms AND ${keyTaken(s, 'j')}
    RETURNING ${FINISHED}, '${from}'::text AS was, j.run_at`;
  // The hand-off statement with `waiting`, a boolean subquery: a job a claim would take first waits.
  const handoffSql = (waiting: string): string =>
    `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       h AS MATERIALIZED (
         SELECT NOT coalesce((SELECT qs.paused OR qs.rate_max IS NOT NULL OR qs.global_concurrency IS NOT NULL FROM ${settings} qs WHERE qs.queue = $1::text), false)
           AND CASE WHEN $8::bigint IS NOT NULL THEN t.ms + $8::bigint ELSE coalesce($9::bigint, t.ms) END <= t.ms
           AND NOT ${waiting} AS take
         FROM t
       ),
       ins AS (
         INSERT INTO ${jobs} AS j (${insertCols}, state, attempts, claim_token, claimed_until, worker_id)
         SELECT $1::text, $2::text::json, ${stampValues},
           CASE WHEN h.take THEN 'processing' ELSE 'pending' END, CASE WHEN h.take THEN 1 ELSE 0 END,
           CASE WHEN h.take THEN gen_random_uuid() END, CASE WHEN h.take THEN t.ms + coalesce($14::bigint, $5::bigint) END,
           CASE WHEN h.take THEN $13::text END
         FROM t, h
         RETURNING ${jobColumns('j')}
       ),
       cnt AS (${countDeltas(s.q, `SELECT $1::text, ins.state, ${dueBucket('ins.state', 'ins.run_at', 't.ms')}, 1 FROM ins, t`)})
       SELECT ins.*, CASE WHEN ins.state = 'pending' THEN ${s.notify('$11')}::text END AS woke, ${foldSometimes(s.q, 'SELECT $1::text')} AS folded FROM ins`;
  // The cross-process hand-off (remote-handoff.ts): handoffSql's checks, then one free slot of a live idle
  // taker of another session ($13 its lock class), taken with the job's id and token, or pending as `enqueue`.
  const takers = `${s.q}.idle_takers`;
  const remoteHandoffSql = `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       h AS MATERIALIZED (
         SELECT CASE WHEN EXISTS (SELECT 1 FROM ${takers} i WHERE i.queue = $1::text AND i.token IS NULL) THEN
           NOT coalesce((SELECT qs.paused OR qs.rate_max IS NOT NULL OR qs.global_concurrency IS NOT NULL FROM ${settings} qs WHERE qs.queue = $1::text), false)
           AND CASE WHEN $8::bigint IS NOT NULL THEN t.ms + $8::bigint ELSE coalesce($9::bigint, t.ms) END <= t.ms
           AND NOT ${claimableWaiting(s, 't.ms')} ELSE false END AS take
         FROM t
       ),
       n AS MATERIALIZED (SELECT nextval(${quoteLiteral(`${s.q}.jobs_id_seq`)}::regclass) AS id),
       slot AS MATERIALIZED (
         UPDATE ${takers} it SET token = gen_random_uuid(), job_id = (SELECT n.id FROM n)
         FROM (SELECT i.taker FROM ${takers} i
               WHERE (SELECT h.take FROM h) AND i.queue = $1::text AND i.token IS NULL
                 AND NOT pg_try_advisory_xact_lock_shared($13::int, i.taker)
               LIMIT 1 FOR UPDATE SKIP LOCKED) f
         WHERE it.taker = f.taker AND it.token IS NULL
         RETURNING it.taker, it.worker_id, it.lease_ms, it.token
       ),
       ins AS (
         INSERT INTO ${jobs} AS j (id, ${insertCols}, state, attempts, claim_token, claimed_until, worker_id)
         OVERRIDING SYSTEM VALUE
         SELECT n.id, $1::text, $2::text::json, ${stampValues},
           CASE WHEN sl.taker IS NOT NULL THEN 'processing' ELSE 'pending' END, CASE WHEN sl.taker IS NOT NULL THEN 1 ELSE 0 END,
           sl.token, CASE WHEN sl.taker IS NOT NULL THEN t.ms + coalesce(sl.lease_ms, $5::bigint) END, sl.worker_id
         FROM t CROSS JOIN n LEFT JOIN slot sl ON true
         RETURNING ${jobColumns('j')}
       ),
       cnt AS (${countDeltas(s.q, `SELECT $1::text, ins.state, ${dueBucket('ins.state', 'ins.run_at', 't.ms')}, 1 FROM ins, t`)})
       SELECT ins.*, sl.taker, CASE WHEN ins.state = 'pending' THEN ${s.notify('$11')}::text END AS woke,
         CASE WHEN sl.taker IS NOT NULL THEN pg_notify(${s.channel}, 'x:' || sl.taker || ':' || (
           SELECT CASE WHEN octet_length(r.j) <= ${REMOTE_NOTIFY_BYTES} THEN r.j ELSE ins.id || ':' || ins.claim_token END
           FROM (SELECT row_to_json(ins)::text AS j) r)) END AS sent,
         ${foldSometimes(s.q, 'SELECT $1::text')} AS folded
       FROM ins LEFT JOIN slot sl ON true`;
  return {
    /**
     * The cross-process hand-off (remote-handoff.ts): the parameters of `enqueue`, then $13 the takers'
     * lock class. When the queue is neither paused nor limited, the job is due now and nothing a claim
     * would take first waits (`claimableWaiting`, as `enqueueHandoff`), it takes one free slot of
     * `idle_takers` whose lock a live session holds (SKIP LOCKED) and inserts the job already claimed
     * with that slot's worker id and lease (processing, attempts 1, a fresh token, deadline now + lease,
     * fenced as any claim), and NOTIFYs `x:<taker>:<job as JSON>` (`x:<taker>:<id>:<token>` for a
     * large job); otherwise the job goes pending and wakes, as `enqueue`. → the job's columns, `taker`
     * (null when not handed off), `woke`. Durable: it is an enqueue.
     */
    enqueueRemote: s.def('q_enqueue_remote', remoteHandoffSql),
    /** $1 queue, $2 payload json text, $3..$10 stamp, $11 wake payload, $12 headers json text → id. Wakes on commit. */
    enqueue: s.def(
      'q_enqueue',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ins AS (INSERT INTO ${jobs} (${insertCols}) SELECT $1::text, $2::text::json, ${stampValues} FROM t RETURNING id, run_at),
       cnt AS (${countDeltas(s.q, `SELECT $1::text, 'pending', ${dueBucket("'pending'", 'ins.run_at', 't.ms')}, 1 FROM ins, t`)})
       SELECT ins.id, ${foldSometimes(s.q, 'SELECT $1::text')} AS folded FROM ins, (SELECT ${s.notify('$11')}) AS n`,
    ),
    /**
     * enqueue straight into an idle worker of this store (local hand-off, lib/internal/handoff.ts):
     * one statement reads the queue's settings and inserts the job already claimed by worker $13
     * (processing, attempts 1, a fresh token, deadline now + ($14 lease override ms, null = the
     * stamped visibility timeout)) when the queue is neither paused nor rate-limited, the job is
     * due now and no job a claim would take first is waiting (`claimableWaiting`: a hand-off never
     * overtakes a ready job); otherwise pending and notifying, exactly as `enqueue`. Parameters of `enqueue`, then
     * $13 worker id, $14 lease override → the job's columns, `woke` (null when handed off). Durable
     * (no `claimDurability`): it is an enqueue.
     */
    enqueueHandoff: s.def('q_enqueue_handoff', handoffSql(claimableWaiting(s, 't.ms'))),
    /**
     * enqueueHandoff to a worker whose claims follow a watermark: the same parameters, then $15
     * watermark priority, $16 watermark run_at; what waits is looked for where that worker's next
     * claim would read (`claimableWaitingAfter`).
     */
    enqueueHandoffAfter: s.def('q_enqueue_handoff_after', handoffSql(claimableWaitingAfter(s, 't.ms'))),
    /**
     * enqueue for a caller-owned transaction (unnamed statements): the same
     * row and wake through the `enqueue_job` function (migration 3), whose
     * plan is cached per connection; also every enqueue with a unique or
     * ordering key. Parameters of enqueue, then $13 unique key, $14 replace,
     * $15 ordering key.
     */
    enqueueCall: s.def('q_enqueue_call', `SELECT ${s.q}.enqueue_job($1::text, $2::text, ${fnArgs}) AS id`),
    /** enqueueCall for a text[] of payloads ($2), enqueued one after another (a keyed batch behaves as enqueues in order). */
    enqueueManyCall: s.def(
      'q_enqueue_many_call',
      `SELECT id FROM ${s.q}.enqueue_jobs($1::text, $2::text[], ${fnArgs}) AS id`,
    ),
    /** Same as enqueue with $2 a text[] of payloads, inserted (and numbered) in array order. */
    enqueueMany: s.def(
      'q_enqueue_many',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ins AS (INSERT INTO ${jobs} (${insertCols})
         SELECT $1::text, p.payload::json, ${stampValues}
         FROM t, unnest($2::text[]) WITH ORDINALITY AS p(payload, ord) ORDER BY p.ord RETURNING id, run_at),
       cnt AS (${countDeltas(s.q, `SELECT $1::text, 'pending', ${dueBucket("'pending'", 'ins.run_at', 't.ms')} AS b, count(*) FROM ins, t GROUP BY b`)})
       SELECT ins.id, ${foldSometimes(s.q, 'SELECT $1::text')} AS folded FROM ins, (SELECT ${s.notify('$11')}) AS n ORDER BY ins.id`,
    ),
    /**
     * enqueueMany with $12 a text[] of headers JSON (null for none), one per payload of $2: one
     * statement, so the jobs share one `enqueued_at` (a scheduler tick's boundaries, each job
     * with its own boundary header).
     */
    enqueueManyHeaders: s.def(
      'q_enqueue_many_headers',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ins AS (INSERT INTO ${jobs} (${insertCols})
         SELECT $1::text, p.payload::json, ${stampValues.replace('$12::text::json', 'p.headers::json')}
         FROM t, unnest($2::text[], $12::text[]) WITH ORDINALITY AS p(payload, headers, ord) ORDER BY p.ord RETURNING id, run_at),
       cnt AS (${countDeltas(s.q, `SELECT $1::text, 'pending', ${dueBucket("'pending'", 'ins.run_at', 't.ms')} AS b, count(*) FROM ins, t GROUP BY b`)})
       SELECT ins.id, ${foldSometimes(s.q, 'SELECT $1::text')} AS folded FROM ins, (SELECT ${s.notify('$11')}) AS n ORDER BY ins.id`,
    ),
    /**
     * One statement: lock ready pending rows and lapsed processing rows (SKIP
     * LOCKED, each branch walking its partial index), hand out the first $2 in
     * claim order with attempts+1, a fresh token and a deadline; lapsed rows
     * whose attempts are exhausted go dead instead and do not count.
     * $1 queue, $2 max, $3 visibility override ms (null = stamped), $4 worker id,
     * $5 wake payload, $6 deferred commit (see {@link DEFERRED_COMMIT}) → claimed rows plus
     * `promoted`, `limited` (the settings it read pause the queue or set a rate limit) and, when fewer
     * than $2 rows were claimed, `next_due_in` (ms to the next future run_at, see `nextDueIn`).
     */
    claim: s.def(
      'q_claim',
      // The clock is read once (t) and used as a scalar subquery, so each bound is an index
      // condition of its partial index instead of a join filter over every row of the queue.
      // Settings: `qp` reads the pause flag by primary key (no row: nothing to pay); `qr` locks the
      // settings row only while a rate limit is set, serializing this queue's window accounting.
      // Windows are aligned to the epoch; a claim whose clock reading is older than the stored
      // window counts against the stored one, and its claim starts at that window's start (a
      // clock read before waiting on the settings row lock can be older). The result always has a row (`extra` LEFT JOIN
      // claimed), so the promotion after buried heads runs when nothing was claimed.
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       ${DEFERRED_COMMIT('$6')},
       qp AS MATERIALIZED (SELECT qs.paused, qs.keyed OR qs.global_concurrency IS NOT NULL AS limits FROM ${settings} qs WHERE qs.queue = $1::text),
       qr AS MATERIALIZED (
         SELECT qs.rate_max, qs.window_start, qs.window_count,
                greatest(qs.window_start, ((SELECT ms FROM t) / qs.rate_per_ms) * qs.rate_per_ms) AS win
         FROM ${settings} qs WHERE qs.queue = $1::text AND qs.rate_max IS NOT NULL FOR UPDATE
       ),
       allow AS MATERIALIZED (
         SELECT CASE WHEN coalesce((SELECT paused OR limits FROM qp), false) THEN 0
                     ELSE coalesce((SELECT greatest(0, least($2::int, qr.rate_max - CASE WHEN qr.window_start = qr.win THEN qr.window_count ELSE 0 END)) FROM qr), $2::int)
                END AS n
       ),
       pend AS (
         SELECT j.id, j.priority, j.run_at, true AS fresh FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.run_at <= (SELECT ms FROM t)
           AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t))
         ORDER BY j.priority DESC, j.run_at, j.id LIMIT (SELECT n FROM allow) FOR UPDATE OF j SKIP LOCKED
       ),
       lapsed AS (
         SELECT j.id, j.priority, j.run_at, false AS fresh, ${LAPSED_ATTEMPT} FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= (SELECT ms FROM t)
           AND j.attempts < j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t))
         ORDER BY j.priority DESC, j.run_at, j.id LIMIT (SELECT n FROM allow) FOR UPDATE OF j SKIP LOCKED
       ),
       picked AS (SELECT r.id, r.fresh FROM (SELECT * FROM pend UNION ALL SELECT l.id, l.priority, l.run_at, l.fresh FROM lapsed l) r ORDER BY r.priority DESC, r.run_at, r.id LIMIT (SELECT n FROM allow)),
       ${buryExhausted(s, '(SELECT ms FROM t)')},
       att AS (${recordLapsed(s.q, LAPSED_FROM)}),
       ${claimPicked(s, jobs, settings)},
       extra AS MATERIALIZED (
         SELECT ${promoteFrom(s, 'buried', '$5')} AS promoted, (SELECT count(*) FROM windowed) AS windowed,
           ${foldSometimes(s.q, `SELECT $1::text WHERE EXISTS (SELECT 1 FROM claimed WHERE claimed.fresh) OR EXISTS (SELECT 1 FROM buried)`)} AS folded,
           coalesce((SELECT paused OR limits FROM qp), false) OR EXISTS (SELECT 1 FROM qr) AS limited,
           coalesce((SELECT limits FROM qp), false) AS limits,
           CASE WHEN (SELECT count(*) FROM claimed) < $2::int AND NOT coalesce((SELECT paused FROM qp), false)
             THEN ${nextDueIn(s, '(SELECT ms FROM t)')} END AS next_due_in)
       SELECT c.*, extra.promoted, extra.folded, extra.limited, extra.limits, extra.next_due_in FROM sc, extra LEFT JOIN claimed c ON true ORDER BY c.priority DESC, c.run_at, c.id`,
    ),
    /**
     * `claim` without what cannot matter while the queue has no settings and
     * is backlogged (see `ClaimGate`): no pause or rate-limit read, and no
     * burial of exhausted lapsed rows, only a look for them: each claimed row
     * says whether there are any (`exhausted`), and the caller follows up
     * with a full claim when they exist or when fewer than $2 rows came back,
     * so a claim call still buries what it finds. Counter deltas as in
     * `claim`. Claimed rows in claim order; none when nothing is claimable. $1 queue, $2 max, $3 visibility
     * override ms (null = stamped), $4 worker id, $5 deferred commit.
     */
    claimPlain: s.def(
      'q_claim_plain',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       ${DEFERRED_COMMIT('$5')},
       pend AS (
         SELECT j.id, j.priority, j.run_at, true AS fresh FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.run_at <= (SELECT ms FROM t)
           AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t)) AND j.concurrency_key IS NULL AND j.rate_key IS NULL
         ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED
       ),
       lapsed AS (
         SELECT j.id, j.priority, j.run_at, false AS fresh, ${LAPSED_ATTEMPT} FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= (SELECT ms FROM t)
           AND j.attempts < j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t)) AND j.concurrency_key IS NULL AND j.rate_key IS NULL
         ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED
       ),
       picked AS (SELECT r.id, r.fresh FROM (SELECT * FROM pend UNION ALL SELECT l.id, l.priority, l.run_at, l.fresh FROM lapsed l) r ORDER BY r.priority DESC, r.run_at, r.id LIMIT $2::int),
       att AS (${recordLapsed(s.q, `SELECT l.*, 'lapsed' AS outcome, NULL::text AS error FROM lapsed l JOIN picked p ON p.id = l.id`)}),
       claimed AS (
         UPDATE ${jobs} j SET state = 'processing', attempts = j.attempts + 1, claim_token = gen_random_uuid(), progress = NULL,
           claimed_until = t.ms + coalesce($3::bigint, j.visibility_timeout_ms), worker_id = $4::text
         FROM picked p, t WHERE j.id = p.id
         RETURNING ${jobColumns('j')}, p.fresh
       ),
       cnt AS (${countDeltas(
         s.q,
         `SELECT $1::text, v.state, 0, v.n
          FROM (SELECT count(*) FILTER (WHERE c.fresh) AS f FROM claimed c) a,
            LATERAL (VALUES ('pending', -a.f), ('processing', a.f)) AS v(state, n)
          WHERE v.n <> 0`,
       )})
       SELECT c.*, (
         SELECT j.claimed_until FROM ${jobs} j
         WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= (SELECT ms FROM t)
           AND j.attempts >= j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > (SELECT ms FROM t))
         ORDER BY j.claimed_until LIMIT 1) IS NOT NULL AS exhausted,
         ${foldSometimes(s.q, `SELECT $1::text WHERE EXISTS (SELECT 1 FROM claimed WHERE claimed.fresh)`)} AS folded
       FROM sc, claimed c ORDER BY c.priority DESC, c.run_at, c.id`,
    ),
    /**
     * A worker's claim after its claim watermark (see `ClaimGate`): ready pending rows only, read
     * from where this store's last claim of the queue stopped instead of from the head of the
     * pending index, so it does not walk the index entries of the rows claimed before (dead, but
     * not yet removable while an old snapshot holds the xmin horizon; B12 in docs/bench.md).
     * Three ranges in claim order, read lazily (the outer LIMIT stops the scan): priorities above
     * the watermark's, its own priority from its `run_at` on, then the lower ones. No settings
     * read, no lapsed rows, no burial: a full claim follows within `CLAIM_SWEEP_MS`.
     * $1 queue, $2 max, $3 visibility override ms (null = stamped), $4 worker id, $5 deferred
     * commit, $6 watermark priority, $7 watermark run_at → the claimed rows (claim order) plus
     * `next_due_in` (ms to the next future run_at of the watermark's priority; the clock a scalar
     * subquery, so it bounds the index range instead of filtering it from its start) when fewer than $2;
     * one row of nulls when none.
     */
    claimAfter: s.def(
      'q_claim_after',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       ${DEFERRED_COMMIT('$5')},
       pend AS (SELECT u.id FROM (
         SELECT a.id FROM (SELECT j.id FROM ${jobs} j WHERE ${readyPlain} AND j.priority > $6::int
           ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED) a
         UNION ALL
         SELECT b.id FROM (SELECT j.id FROM ${jobs} j WHERE ${readyPlain} AND j.priority = $6::int AND j.run_at >= $7::bigint
           ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED) b
         UNION ALL
         SELECT c.id FROM (SELECT j.id FROM ${jobs} j WHERE ${readyPlain} AND j.priority < $6::int
           ORDER BY j.priority DESC, j.run_at, j.id LIMIT $2::int FOR UPDATE OF j SKIP LOCKED) c
       ) u LIMIT $2::int),
       claimed AS (
         UPDATE ${jobs} j SET state = 'processing', attempts = j.attempts + 1, claim_token = gen_random_uuid(), progress = NULL,
           claimed_until = t.ms + coalesce($3::bigint, j.visibility_timeout_ms), worker_id = $4::text
         FROM pend p, t WHERE j.id = p.id
         RETURNING ${jobColumns('j')}
       ),
       cnt AS (${countDeltas(
         s.q,
         `SELECT $1::text, v.state, 0, v.n
          FROM (SELECT count(*) AS f FROM claimed c) a,
            LATERAL (VALUES ('pending', -a.f), ('processing', a.f)) AS v(state, n)
          WHERE v.n <> 0`,
       )}),
       extra AS MATERIALIZED (
         SELECT ${foldSometimes(s.q, `SELECT $1::text WHERE EXISTS (SELECT 1 FROM claimed)`)} AS folded,
           CASE WHEN (SELECT count(*) FROM claimed) < $2::int THEN (
             SELECT j.run_at - (SELECT ms FROM t) FROM ${jobs} j
             WHERE j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.priority = $6::int AND j.run_at > (SELECT ms FROM t)
             ORDER BY j.run_at LIMIT 1) END AS next_due_in)
       SELECT c.*, extra.next_due_in FROM sc, extra LEFT JOIN claimed c ON true ORDER BY c.priority DESC, c.run_at, c.id`,
    ),
    /**
     * The sweep of a queue whose worker claims follow a watermark (see `ClaimGate`), run beside those
     * claims instead of in their path: it claims nothing and says whether a full claim is needed,
     * `limited` (a pause, a rate or concurrency limit, or keys: the watermark is not trusted) or
     * `behind` (what `claimAfter` cannot reach: a ready job of the watermark's priority older than its
     * `run_at`, or a lease that has lapsed). Those probes walk the index entries of the jobs claimed
     * before, which while an old snapshot holds the xmin horizon are many and dead: off the claim path,
     * that costs the database some work but no job any wait. $1 queue, $2 watermark priority,
     * $3 watermark run_at → limited, behind.
     */
    claimSweep: s.def(
      'q_claim_sweep',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms)
       SELECT coalesce((SELECT qs.paused OR qs.keyed OR qs.rate_max IS NOT NULL OR qs.global_concurrency IS NOT NULL
                        FROM ${settings} qs WHERE qs.queue = $1::text), false) AS limited,
         EXISTS (SELECT 1 FROM ${jobs} j WHERE j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked
                   AND j.priority = $2::int AND j.run_at < $3::bigint AND j.run_at <= t.ms AND (j.expires_at IS NULL OR j.expires_at > t.ms))
         OR EXISTS (SELECT 1 FROM ${jobs} j WHERE j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= t.ms
                      AND (j.expires_at IS NULL OR j.expires_at > t.ms)) AS behind
       FROM t`,
    ),
    /** $1 id, $2 token, $3 wake payload → n (0 or 1). The job's ordering key is taken first ({@link keyFirst}). */
    ack: s.def(
      'q_ack',
      `WITH ${keyFirst(s, keyOf(s, 'k.id = $1::bigint'))},
       d AS (DELETE FROM ${jobs} j USING (SELECT ${NOW_MS} AS ms) t WHERE ${FENCE} AND ${KEY_FIRST} RETURNING ${FINISHED}),
       cnt AS (${countDeltas(s.q, `SELECT d.queue, 'processing', 0, -1 FROM d`)})
       SELECT (SELECT count(*) FROM d) AS n, ${promoteFrom(s, 'd', '$3')} AS promoted, ${foldSometimes(s.q, 'SELECT d.queue FROM d')} AS folded`,
    ),
    /** ack of a job whose claimed handle has no ordering key: nothing to promote. $1 id, $2 token → n. */
    ackPlain: s.def(
      'q_ack_plain',
      `WITH d AS (DELETE FROM ${jobs} j USING (SELECT ${NOW_MS} AS ms) t WHERE ${FENCE} RETURNING j.queue),
       cnt AS (${countDeltas(s.q, `SELECT d.queue, 'processing', 0, -1 FROM d`)})
       SELECT count(*) AS n, ${foldSometimes(s.q, 'SELECT d.queue FROM d')} AS folded FROM d`,
    ),
    /** ackBatch of such jobs. $1 queue, $2 ids bigint[], $3 tokens → n. */
    ackBatchPlain: s.def(
      'q_ack_batch_plain',
      `WITH ${ackedBatch('1')}
       SELECT count(*) AS n, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded FROM d`,
    ),
    /**
     * ackBatchPlain with an outbox's receipts upserted by the same statement (every one, whatever the
     * fence says). $1 queue, $2 ids bigint[], $3 tokens, $4 outbox, $5 message ids bigint[], $6 receipt texts → n.
     */
    ackBatchPlainReceipts: s.def(
      'q_ack_batch_plain_r',
      `WITH ${ackedBatch('1')},
       r AS (
         INSERT INTO ${s.q}.outbox_receipts (outbox, message_id, receipt, delivered_at)
         SELECT $4::text, u.id, u.r::json, ${NOW_MS} FROM unnest($5::bigint[], $6::text[]) AS u(id, r)
         ON CONFLICT (outbox, message_id) DO UPDATE SET receipt = EXCLUDED.receipt, delivered_at = EXCLUDED.delivered_at)
       SELECT count(*) AS n, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded FROM d`,
    ),
    /**
     * $1 queue, $2 ids bigint[], $3 tokens uuid[], $4 wake payload → n, and `held`: the ids of jobs
     * still claimed that it left because another transaction holds their ordering key (null when it
     * acked every job it was given). The caller acks those one by one (`ack`, which waits for the key).
     */
    ackBatch: s.def(
      'q_ack_batch',
      `WITH ${ackedBatch(FINISHED, true)}
       SELECT (SELECT count(*) FROM d) AS n, ${promoteFrom(s, 'd', '$4')} AS promoted, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded,
         CASE WHEN (SELECT count(*) FROM d) < cardinality($2::bigint[]) THEN ARRAY(
           SELECT x.id FROM ${jobs} j, unnest($2::bigint[], $3::text[]) AS x(id, token)
           WHERE ${batchFence} AND j.ordering_key IS NOT NULL AND x.id NOT IN (SELECT d.id FROM d)) END AS held`,
    ),
    /**
     * $1 id, $2 token, $3 delay ms, $4 last error, $5 attempt error (the stack), $6 wake payload → state. Dead when attempts
     * are exhausted (the progress kept); back to pending without the attempt's progress otherwise.
     */
    retry: s.def(
      'q_retry',
      // The key is taken first when the job goes dead (its next job becomes head); a retried job stays its key's head.
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ${keyFirst(s, keyOf(s, 'k.id = $1::bigint AND k.attempts >= k.max_attempts'))},
       u AS (
         UPDATE ${jobs} j SET
           state = CASE WHEN j.attempts >= j.max_attempts THEN 'dead' ELSE 'pending' END,
           run_at = CASE WHEN j.attempts >= j.max_attempts THEN j.run_at ELSE t.ms + $3::bigint END,
           died_at = CASE WHEN j.attempts >= j.max_attempts THEN t.ms ELSE NULL END,
           progress = CASE WHEN j.attempts >= j.max_attempts THEN j.progress END,
           last_error = $4::text, ${CLEAR_CLAIM}
         FROM t, ${jobs} o WHERE ${FENCE} AND o.id = j.id AND ${KEY_FIRST} RETURNING j.state, j.run_at, ${FINISHED}, ${ENDED_ATTEMPT}
       ),
       att AS (${recordAttempt(s.q, 'u', "CASE WHEN u.state = 'dead' THEN 'dead' ELSE 'retried' END", '$5::text')}),
       d AS (SELECT * FROM u WHERE u.state = 'dead'),
       cnt AS (${moved(s, 'u', 'processing')})
       SELECT u.state, CASE WHEN u.state = 'pending' THEN ${s.notify('$6')}::text END AS woke, ${promoteFrom(s, 'd', '$6')} AS promoted,
         ${foldSometimes(s.q, 'SELECT u.queue')} AS folded FROM u`,
    ),
    /** $1 id, $2 token, $3 last error, $4 attempt error (the stack), $5 wake payload → n. */
    fail: s.def(
      'q_fail',
      `WITH ${keyFirst(s, keyOf(s, 'k.id = $1::bigint'))},
       d AS (
         UPDATE ${jobs} j SET state = 'dead', died_at = t.ms, last_error = $3::text, ${CLEAR_CLAIM}
         FROM (SELECT ${NOW_MS} AS ms) t, ${jobs} o WHERE ${FENCE} AND o.id = j.id AND ${KEY_FIRST} RETURNING ${FINISHED}, ${ENDED_ATTEMPT}),
       att AS (${recordAttempt(s.q, 'd', "'dead'", '$4::text')}),
       cnt AS (${countDeltas(s.q, `SELECT d.queue, v.state, 0, v.n FROM d, (VALUES ('processing', -1), ('dead', 1)) AS v(state, n)`)})
       SELECT (SELECT count(*) FROM d) AS n, ${promoteFrom(s, 'd', '$5')} AS promoted, ${foldSometimes(s.q, 'SELECT d.queue FROM d')} AS folded`,
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
         FROM t WHERE ${FENCE} RETURNING j.id, j.queue, j.state, j.run_at
       ),
       cnt AS (${moved(s, 'u', 'processing')})
       SELECT u.id, ${s.notify('$3')}::text AS woke, ${foldSometimes(s.q, 'SELECT u.queue')} AS folded FROM u`,
    ),
    /** $1 queue, $2 unique key. */
    getJobByKey: s.def(
      'q_get_by_key',
      `SELECT ${jobColumns('j')} FROM ${jobs} j WHERE j.queue = $1::text AND j.unique_key = $2::text AND j.state IN ('pending', 'processing')`,
    ),
    /**
     * $1 queue, $2 wake payload → n. One update per old state, so each row's
     * old state is known for its counter delta (a row whose state changed
     * under the sweep is left to the next one).
     */
    expire: s.def(
      'q_expire',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       dp AS (${expireFrom('pending')}),
       dq AS (${expireFrom('processing')}),
       d AS (SELECT * FROM dp UNION ALL SELECT * FROM dq),
       cnt AS (${countDeltas(
         s.q,
         `SELECT x.queue, x.state, x.b, sum(x.n) FROM (
            SELECT d.queue, d.was AS state, ${dueBucket('d.was', 'd.run_at', 't.ms')} AS b, -1 AS n FROM d, t
            UNION ALL SELECT d.queue, 'dead', 0, 1 FROM d
          ) x GROUP BY x.queue, x.state, x.b`,
       )})
       SELECT (SELECT count(*) FROM d) AS n, ${promoteFrom(s, 'd', '$2')} AS promoted, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded`,
    ),
    /** $1 queue → n. */
    purgeRetained: s.def(
      'q_purge_retained',
      `WITH d AS (
         DELETE FROM ${jobs} j USING (SELECT ${NOW_MS} AS ms) t
         WHERE j.queue = $1::text AND j.state = 'dead' AND j.dead_letter_retention_ms IS NOT NULL
           AND j.died_at + j.dead_letter_retention_ms <= t.ms
         RETURNING 1),
       cnt AS (${minusAll(s, 'd', 'dead')})
       SELECT count(*) AS n, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded FROM d`,
    ),
    /** $1 queue, $2 before (died_at <), $3 after (id >), $4 limit. */
    listDead: s.def(
      'q_list_dead',
      `SELECT ${jobColumns('j')} FROM ${jobs} j
       WHERE j.queue = $1::text AND j.state = 'dead'
         AND ($2::bigint IS NULL OR j.died_at < $2::bigint) AND ($3::bigint IS NULL OR j.id > $3::bigint)
       ORDER BY j.id LIMIT $4::int`,
    ),
    /**
     * $1 queue, $2 ids, $3 wake payload → `moved` (rows back to pending) and `conflicts` (ids left
     * dead because a live job holds their unique key), through `redrive_dead` (migration 8).
     */
    retryDead: s.def(
      'q_redrive_dead',
      `SELECT r.moved, r.conflicts::text[] AS conflicts FROM ${s.q}.redrive_dead($1::text, $2::bigint[], ${s.channel}, $3::text) r`,
    ),
    /**
     * $1 queue, $2 ordering keys text[], $3 unique keys text[]: takes every key lock of a keyed bulk
     * up front in the canonical order (`lock_keys`, migration 8); the bulk's enqueues then find
     * them held. Inside a transaction only (the locks last until it ends).
     */
    lockKeys: s.def('q_lock_keys', `SELECT ${s.q}.lock_keys($1::text, $2::text[], $3::text[])`),
    /** $1 queue, $2 ids → n. */
    purgeDead: s.def(
      'q_purge_dead',
      `WITH d AS (DELETE FROM ${jobs} WHERE queue = $1::text AND state = 'dead' AND id = ANY($2::bigint[]) RETURNING 1),
       cnt AS (${minusAll(s, 'd', 'dead')})
       SELECT count(*) AS n, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded FROM d`,
    ),
    /** $1 queue → pending, processing, dead, scheduled, oldest (counters, not a count of rows; counts.sql.ts). */
    stats: s.def('q_stats', queueStatsSql(s.q)),
    /** $1 queue → paused, rate_max, rate_per_ms (no row: defaults). */
    getSettings: s.def(
      'q_get_settings',
      `SELECT paused, rate_max, rate_per_ms FROM ${settings} WHERE queue = $1::text`,
    ),
    /**
     * $1 queue, $2 paused, $3 wake payload. Resuming wakes the queue's workers;
     * either way `s:<queue>` tells every store of the schema, on commit, that
     * the queue's settings changed (see `ClaimGate`).
     */
    setPaused: s.def(
      'q_set_paused',
      `WITH u AS (
         INSERT INTO ${settings} AS qs (queue, paused) VALUES ($1::text, $2::boolean)
         ON CONFLICT (queue) DO UPDATE SET paused = EXCLUDED.paused RETURNING qs.paused)
       SELECT CASE WHEN NOT u.paused THEN ${s.notify('$3')}::text END AS woke, ${s.notify("'s:' || $1::text")}::text AS changed FROM u`,
    ),
    /** $1 queue, $2 max (null = no limit), $3 per ms, $4 wake payload. A new limit starts a fresh window; notifies `s:<queue>` like setPaused. */
    setRateLimit: s.def(
      'q_set_rate_limit',
      `WITH u AS (
         INSERT INTO ${settings} AS qs (queue, rate_max, rate_per_ms) VALUES ($1::text, $2::int, $3::bigint)
         ON CONFLICT (queue) DO UPDATE SET rate_max = EXCLUDED.rate_max, rate_per_ms = EXCLUDED.rate_per_ms, window_start = 0, window_count = 0
         RETURNING qs.queue)
       SELECT ${s.notify('$4')}::text AS woke, ${s.notify("'s:' || $1::text")}::text AS changed FROM u`,
    ),
    ...outcomeSql(s),
  } satisfies Record<string, Sql>;
}

/** Columns of `job_outcomes` in insert order (migration 10). */
const OUTCOME_COLS =
  'id, queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, dead_letter_retention_ms, run_at, enqueued_at, expires_at, headers, unique_key, ordering_key, result, progress, finished_at, keep_until';

/** The outcome record of the ended job rows of CTE `d` (`RETURNING j.*`): `state`, result and progress expressions, retention parameter; clock `t.ms`. */
function outcomeOf(
  d: string,
  state: 'completed' | 'cancelled',
  result: string,
  progress: string,
  retention: string,
): string {
  return `SELECT ${d}.id, ${d}.queue, '${state}', ${d}.payload, ${d}.priority, ${d}.attempts, ${d}.max_attempts, ${d}.visibility_timeout_ms,
    ${d}.backoff_base_ms, ${d}.dead_letter_retention_ms, ${d}.run_at, ${d}.enqueued_at, ${d}.expires_at, ${d}.headers, ${d}.unique_key,
    ${d}.ordering_key, ${result}, ${progress}, t.ms, t.ms + ${retention}::bigint FROM ${d}, t`;
}

/**
 * Results, progress and cancellation (SPEC §11, migration 10). An outcome record is written in the
 * statement that deletes the job row, so a result is never lost once its ack committed and a
 * cancelled job can never run again. Plain acks do not come here.
 */
function outcomeSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  const outcomes = `${s.q}.job_outcomes`;
  // Cancel of the live (or, by id, any) rows of queue $1 matching `sel` ($2), whose ordering key
  // `key` selects (keyFirst). $3 retention ms (null: forever), $4 cancel wake, $5 result wake, $6
  // queue wake (promotion) → n, how many were processing.
  const cancel = (name: string, sel: string, key: string) =>
    s.def(
      name,
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ${keyFirst(s, key)},
       d AS (DELETE FROM ${jobs} j WHERE j.queue = $1::text AND ${sel} AND ${KEY_FIRST} RETURNING j.*),
       ins AS (INSERT INTO ${outcomes} (${OUTCOME_COLS}) ${outcomeOf('d', 'cancelled', 'NULL::json', 'd.progress', '$3')} WHERE d.state <> 'dead' RETURNING 1),
       cnt AS (${deleted(s, 'd')})
       SELECT (SELECT count(*) FROM d) AS n, (SELECT count(*) FROM d WHERE d.state = 'processing') AS running,
         ${promoteFrom(s, 'd', '$6')} AS promoted, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded,
         CASE WHEN EXISTS (SELECT 1 FROM d WHERE d.state = 'processing') THEN ${s.notify('$4')}::text END AS cancel_woke,
         (SELECT ${s.notify('$5')}::text FROM ins LIMIT 1) AS result_woke`,
    );
  return {
    /**
     * ack writing an outcome record: $1 id, $2 token, $3 result json text (null: none), $4 progress
     * json text (null: the row's), $5 retention ms (null: forever), $6 result wake, $7 queue wake → n.
     */
    ackOutcome: s.def(
      'q_ack_outcome',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       ${keyFirst(s, keyOf(s, 'k.id = $1::bigint'))},
       d AS (DELETE FROM ${jobs} j USING t WHERE ${FENCE} AND ${KEY_FIRST} RETURNING j.*),
       ins AS (INSERT INTO ${outcomes} (${OUTCOME_COLS}) ${outcomeOf('d', 'completed', '$3::text::json', 'coalesce($4::text::json, d.progress)', '$5')} RETURNING 1),
       cnt AS (${countDeltas(s.q, `SELECT d.queue, 'processing', 0, -1 FROM d`)})
       SELECT (SELECT count(*) FROM d) AS n, ${promoteFrom(s, 'd', '$7')} AS promoted, ${foldSometimes(s.q, 'SELECT d.queue FROM d')} AS folded,
         (SELECT ${s.notify('$6')}::text FROM ins LIMIT 1) AS woke`,
    ),
    /** $1 id, $2 token, $3 progress json text, $4 progress wake → a row when written (fenced like every handle op). */
    progress: s.def(
      'q_progress',
      `WITH u AS (UPDATE ${jobs} j SET progress = $3::text::json FROM (SELECT ${NOW_MS} AS ms) t WHERE ${FENCE} RETURNING j.id)
       SELECT u.id, ${s.notify('$4')}::text AS woke FROM u`,
    ),
    cancelOutcome: cancel(
      'q_cancel_outcome',
      'j.id = $2::bigint',
      keyOf(s, 'k.queue = $1::text AND k.id = $2::bigint'),
    ),
    cancelByKeyOutcome: cancel(
      'q_cancel_by_key_outcome',
      "j.unique_key = $2::text AND j.state IN ('pending', 'processing')",
      keyOf(s, "k.queue = $1::text AND k.unique_key = $2::text AND k.state IN ('pending', 'processing')"),
    ),
    cancelByOrderingKey: cancel(
      'q_cancel_by_ordering_key',
      "j.ordering_key = $2::text AND j.state IN ('pending', 'processing')",
      'SELECT $1::text, $2::text',
    ),
    /** $1 queue, $2 id: the live or dead row (with progress), else the outcome record, as `JobRow` plus progress, result, finished_at. */
    getJobFull: s.def(
      'q_get_full',
      `SELECT ${jobColumns('j')}, j.progress::text AS progress, NULL::text AS result, NULL::bigint AS finished_at
       FROM ${jobs} j WHERE j.queue = $1::text AND j.id = $2::bigint
       UNION ALL
       SELECT o.id, o.queue, o.state, o.payload::text, o.priority, o.attempts, o.max_attempts, o.visibility_timeout_ms, o.backoff_base_ms,
         o.dead_letter_retention_ms, o.run_at, o.enqueued_at, o.expires_at, NULL::bigint, NULL::text, NULL::text, NULL::bigint, o.headers::text,
         o.unique_key, o.ordering_key, NULL::text, NULL::text, o.progress::text, o.result::text, o.finished_at
       FROM ${outcomes} o WHERE o.queue = $1::text AND o.id = $2::bigint`,
    ),
    /** $1 queue, $2 ids bigint[] → ids recorded as cancelled, ascending. */
    cancelledAmong: s.def(
      'q_cancelled_among',
      `SELECT o.id FROM ${outcomes} o WHERE o.queue = $1::text AND o.state = 'cancelled' AND o.id = ANY($2::bigint[]) ORDER BY o.id`,
    ),
    /** $1 queue → n: outcome records past their retention deleted. */
    purgeOutcomes: s.def(
      'q_purge_outcomes',
      `WITH d AS (DELETE FROM ${outcomes} o WHERE o.queue = $1::text AND o.keep_until IS NOT NULL AND o.keep_until <= ${NOW_MS} RETURNING 1)
       SELECT count(*) AS n FROM d`,
    ),
    /** $1 queue → n. Failed-attempt rows (migration 14) of up to 1000 jobs gone from both jobs and outcomes. */
    pruneAttempts: s.def(
      'q_prune_attempts',
      `WITH gone AS (
         SELECT DISTINCT a.job_id FROM ${s.q}.job_attempts a
         WHERE a.queue = $1::text AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = a.job_id)
           AND NOT EXISTS (SELECT 1 FROM ${outcomes} o WHERE o.id = a.job_id)
         LIMIT 1000),
       d AS (DELETE FROM ${s.q}.job_attempts a USING gone g WHERE a.job_id = g.job_id RETURNING 1)
       SELECT count(*) AS n FROM d`,
    ),
  } satisfies Record<string, Sql>;
}

export type QueueSql = ReturnType<typeof queueSql>;
