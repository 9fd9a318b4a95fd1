// Per-key concurrency, per-key rate limits and global concurrency on PostgreSQL (docs/limits.md).
import { foldSometimes } from './counts.sql.js';
import {
  DEFERRED_COMMIT,
  LAPSED_ATTEMPT,
  buryExhausted,
  claimPicked,
  nextDueIn,
  promoteFrom,
  recordLapsed,
} from './queue.sql.js';
import { FIRST_SCAN_MIN, FIRST_SCAN_PER_ROOM } from '../shared/limits.js';
import { NOW_MS, type SchemaSql } from './schema-sql.js';

/**
 * Deletes the per-key rate windows (of the queues `where` selects, on alias `w`) that no claim can
 * read again: their period ended, or their queue has no key rate limit any more. A deleted window
 * reads as an empty one, which is what an ended window counts for. Rows a claim holds are skipped
 * (SKIP LOCKED): that claim is renewing them, and the sweep never waits on one nor closes a cycle
 * with it.
 */
function endedWindows(s: SchemaSql, where: string): string {
  return `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
     gone AS (
       SELECT w.queue, w.key FROM ${s.q}.key_rate_windows w
       WHERE ${where} AND NOT EXISTS (
         SELECT 1 FROM ${s.q}.queue_settings q
         WHERE q.queue = w.queue AND q.key_rate_max IS NOT NULL AND q.key_rate_per_ms IS NOT NULL
           AND w.window_start + q.key_rate_per_ms > (SELECT ms FROM t))
       FOR UPDATE OF w SKIP LOCKED),
     d AS (DELETE FROM ${s.q}.key_rate_windows w USING gone g WHERE w.queue = g.queue AND w.key = g.key RETURNING 1)
     SELECT count(*) AS n FROM d`;
}

/** The statements of the limits, for one schema. */
export function limitsSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  const settings = `${s.q}.queue_settings`;
  const now = '(SELECT ms FROM t)';
  const notFull = `(j.concurrency_key IS NULL OR j.concurrency_key NOT IN (SELECT key FROM cfull))
           AND (j.rate_key IS NULL OR j.rate_key NOT IN (SELECT key FROM rfull))`;
  /** The candidates of keys not at their limit in claim order, pending and lapsed, up to `limit`; `when` gates the scan. */
  const pendingScan = (limit: string, when = 'true'): string =>
    `SELECT j.id, j.priority, j.run_at, j.concurrency_key AS ck, j.rate_key AS rk, true AS fresh FROM ${jobs} j
          WHERE ${when} AND j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.run_at <= ${now}
            AND (j.expires_at IS NULL OR j.expires_at > ${now}) AND ${notFull}
          ORDER BY j.priority DESC, j.run_at, j.id LIMIT ${limit}`;
  const lapsedScan = (limit: string, when = 'true'): string =>
    `SELECT j.id, j.priority, j.run_at, j.concurrency_key AS ck, j.rate_key AS rk, false AS fresh FROM ${jobs} j
          WHERE ${when} AND j.queue = $1::text AND j.state = 'processing' AND j.claimed_until <= ${now}
            AND j.attempts < j.max_attempts AND (j.expires_at IS NULL OR j.expires_at > ${now}) AND ${notFull}
          ORDER BY j.priority DESC, j.run_at, j.id LIMIT ${limit}`;
  return {
    /** The enqueue function with the job's keys: parameters of `enqueueCall`, then $16 concurrency key, $17 rate key → id. */
    enqueueCall: s.def(
      'l_enqueue_call',
      `SELECT ${s.q}.enqueue_job_limited($1::text, $2::text, $3::int, $4::int, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::bigint, $10::bigint, ${s.channel}, $11::text, $12::text, $13::text, $14::boolean, $15::text, $16::text, $17::text) AS id`,
    ),
    /**
     * The claim of a queue with limits (a keyed job was enqueued, or `globalConcurrency` is set).
     * It locks the queue's settings row first, so a queue's limited claims run one at a time,
     * and counts what is processing through `limit_counts` (VOLATILE: a snapshot taken after the
     * lock, so every claim committed before it counts). Then, in claim order, it takes candidates
     * whose key is below its concurrency limit and its rate window, up to the global limit and the
     * queue's own rate limit; a processing job counts while its lease runs. Of the per-key rate
     * windows it reads only the full ones of the current period (which keep their keys' jobs out of
     * the scan) and its candidates' keys' ones (`key_rate_full`, `key_rate_used`, VOLATILE like
     * `limit_counts`), so its cost does not grow with the keys ever used. Exhausted lapsed jobs go
     * dead as in `claim`. Parameters and result as `claim`, plus $7 the candidate scan bound;
     * `limits` false once the queue has none (the store goes back to `claim`).
     */
    claim: s.def(
      'l_claim',
      `WITH t AS MATERIALIZED (SELECT ${NOW_MS} AS ms),
       ${DEFERRED_COMMIT('$6')},
       qs AS MATERIALIZED (SELECT q.* FROM ${settings} q WHERE q.queue = $1::text FOR UPDATE),
       lc AS MATERIALIZED (
         SELECT * FROM ${s.q}.limit_counts($1::text, (SELECT count(*) FROM qs), ${now},
           coalesce((SELECT global_concurrency IS NOT NULL FROM qs), false), coalesce((SELECT keyed FROM qs), false),
           NULL::bigint)
       ),
       kr AS MATERIALIZED (
         SELECT (${now} / qs.key_rate_per_ms) * qs.key_rate_per_ms AS win, qs.key_rate_max AS rmax
         FROM qs WHERE qs.key_rate_max IS NOT NULL
       ),
       qr AS MATERIALIZED (
         SELECT qs.rate_max, qs.window_start, qs.window_count,
                greatest(qs.window_start, (${now} / qs.rate_per_ms) * qs.rate_per_ms) AS win
         FROM qs WHERE qs.rate_max IS NOT NULL
       ),
       allow AS MATERIALIZED (
         SELECT CASE WHEN coalesce((SELECT paused FROM qs), false) THEN 0
                     ELSE least(
                       coalesce((SELECT greatest(0, least($2::int, qr.rate_max - CASE WHEN qr.window_start = qr.win THEN qr.window_count ELSE 0 END)) FROM qr), $2::int),
                       coalesce((SELECT greatest(0, qs.global_concurrency - coalesce((SELECT lc.n FROM lc WHERE lc.kind = 'g'), 0)) FROM qs WHERE qs.global_concurrency IS NOT NULL), $2::int))
                END AS n
       ),
       cl AS MATERIALIZED (SELECT coalesce((SELECT concurrency_limit FROM qs), 1) AS n, (SELECT key_rate_max FROM qs) AS rmax),
       cfull AS (SELECT lc.key FROM lc, cl WHERE lc.kind = 'c' AND lc.n >= cl.n),
       rfull AS MATERIALIZED (SELECT f.key FROM kr, ${s.q}.key_rate_full($1::text, kr.win, kr.rmax) f),
       fs AS MATERIALIZED (SELECT least($7::int, greatest(${FIRST_SCAN_MIN}, ${FIRST_SCAN_PER_ROOM} * $2::int)) AS n),
       candp AS MATERIALIZED (${pendingScan('(SELECT n FROM fs)')}),
       candl AS MATERIALIZED (${lapsedScan('(SELECT n FROM fs)')}),
       hz AS MATERIALIZED (
         SELECT h.priority, h.run_at, h.id FROM (
           (SELECT c.priority, c.run_at, c.id FROM candp c WHERE (SELECT count(*) FROM candp) >= (SELECT n FROM fs)
            ORDER BY c.priority, c.run_at DESC, c.id DESC LIMIT 1)
           UNION ALL
           (SELECT c.priority, c.run_at, c.id FROM candl c WHERE (SELECT count(*) FROM candl) >= (SELECT n FROM fs)
            ORDER BY c.priority, c.run_at DESC, c.id DESC LIMIT 1)) h
         ORDER BY h.priority DESC, h.run_at, h.id LIMIT 1
       ),
       head AS (
         SELECT c.ck, c.rk,
           row_number() OVER (PARTITION BY c.ck ORDER BY c.priority DESC, c.run_at, c.id) AS ckn,
           row_number() OVER (PARTITION BY c.rk ORDER BY c.priority DESC, c.run_at, c.id) AS rkn
         FROM (SELECT * FROM candp UNION ALL SELECT * FROM candl) c
         WHERE NOT EXISTS (SELECT 1 FROM hz WHERE (-c.priority, c.run_at, c.id) > (-hz.priority, hz.run_at, hz.id))
       ),
       more AS MATERIALIZED (
         SELECT coalesce(EXISTS (SELECT 1 FROM hz) AND (
           SELECT count(*) FROM head h, cl
           WHERE (h.ck IS NULL OR (h.ckn = 1 AND cl.n >= 1)) AND (h.rk IS NULL OR cl.rmax IS NULL OR (h.rkn = 1 AND cl.rmax >= 1))
         ) < (SELECT n FROM allow), true) AS v
       ),
       cand AS (
         SELECT * FROM candp WHERE NOT (SELECT v FROM more)
         UNION ALL SELECT * FROM candl WHERE NOT (SELECT v FROM more)
         UNION ALL (${pendingScan('$7::int', '(SELECT v FROM more)')})
         UNION ALL (${lapsedScan('$7::int', '(SELECT v FROM more)')})
       ),
       ru AS MATERIALIZED (
         SELECT u.key, u.n FROM kr,
           ${s.q}.key_rate_used($1::text, kr.win, ARRAY(SELECT DISTINCT c.rk FROM cand c WHERE c.rk IS NOT NULL)) u
       ),
       ranked AS (
         SELECT c.*, coalesce(bc.n, 0) AS cbusy, coalesce(br.n, 0) AS rused,
           row_number() OVER (PARTITION BY c.ck ORDER BY c.priority DESC, c.run_at, c.id) AS ckn,
           row_number() OVER (PARTITION BY c.rk ORDER BY c.priority DESC, c.run_at, c.id) AS rkn
         FROM cand c
         LEFT JOIN lc bc ON bc.kind = 'c' AND bc.key = c.ck
         LEFT JOIN ru br ON br.key = c.rk
       ),
       ok AS (
         SELECT r.id, r.fresh FROM ranked r, cl
         WHERE (r.ck IS NULL OR r.ckn <= cl.n - r.cbusy) AND (r.rk IS NULL OR cl.rmax IS NULL OR r.rkn <= cl.rmax - r.rused)
         ORDER BY r.priority DESC, r.run_at, r.id LIMIT (SELECT n FROM allow)
       ),
       picked AS (
         SELECT j.id, ok.fresh, ${LAPSED_ATTEMPT} FROM ${jobs} j JOIN ok ON j.id = ok.id
         WHERE (j.state = 'pending' AND NOT j.blocked) OR (j.state = 'processing' AND j.claimed_until <= ${now})
         FOR UPDATE OF j SKIP LOCKED
       ),
       ${buryExhausted(s, now)},
       att AS (${recordLapsed(
         s.q,
         `SELECT p.id, p.a_attempt, p.a_worker, p.a_claimed_at, p.a_ended_at, 'lapsed' AS outcome, NULL::text AS error FROM picked p WHERE NOT p.fresh
          UNION ALL SELECT e.id, e.a_attempt, e.a_worker, e.a_claimed_at, e.a_ended_at, 'dead', 'max attempts exceeded' FROM exhausted e`,
       )}),
       ${claimPicked(s, jobs, settings)},
       kw AS (
         INSERT INTO ${s.q}.key_rate_windows AS w (queue, key, window_start, window_count)
         SELECT $1::text, c.rate_key, (${now} / qs.key_rate_per_ms) * qs.key_rate_per_ms, count(*)::int
         FROM claimed c, qs WHERE c.rate_key IS NOT NULL AND qs.key_rate_max IS NOT NULL
         GROUP BY c.rate_key, qs.key_rate_per_ms
         ON CONFLICT (queue, key) DO UPDATE SET
           window_count = CASE WHEN w.window_start = EXCLUDED.window_start THEN w.window_count + EXCLUDED.window_count ELSE EXCLUDED.window_count END,
           window_start = EXCLUDED.window_start
         RETURNING 1
       ),
       extra AS MATERIALIZED (
         SELECT ${promoteFrom(s, 'buried', '$5')} AS promoted, (SELECT count(*) FROM windowed) + (SELECT count(*) FROM kw) AS windowed,
           ${foldSometimes(s.q, `SELECT $1::text WHERE EXISTS (SELECT 1 FROM claimed WHERE claimed.fresh) OR EXISTS (SELECT 1 FROM buried)`)} AS folded,
           coalesce((SELECT keyed OR global_concurrency IS NOT NULL FROM qs), false) AS limits,
           CASE WHEN (SELECT count(*) FROM claimed) < $2::int AND NOT coalesce((SELECT paused FROM qs), false)
             THEN ${nextDueIn(s, now)} END AS next_due_in)
       SELECT c.*, extra.promoted, extra.folded, extra.limits, extra.next_due_in FROM sc, extra LEFT JOIN claimed c ON true ORDER BY c.priority DESC, c.run_at, c.id`,
    ),
    /**
     * $1 queue, $2..$8: set concurrency limit?, value, set global?, value, set key rate?, max, perMs;
     * $9 wake payload. Writes the given limits and wakes the queue's workers and every store's
     * claim gate (`s:<queue>`); a new key rate limit starts fresh windows.
     */
    setLimits: s.def(
      'l_set_limits',
      `WITH u AS (
         INSERT INTO ${settings} AS qs (queue, concurrency_limit, global_concurrency, key_rate_max, key_rate_per_ms)
         VALUES ($1::text, $3::int, $5::int, $7::int, $8::bigint)
         ON CONFLICT (queue) DO UPDATE SET
           concurrency_limit = CASE WHEN $2::boolean THEN EXCLUDED.concurrency_limit ELSE qs.concurrency_limit END,
           global_concurrency = CASE WHEN $4::boolean THEN EXCLUDED.global_concurrency ELSE qs.global_concurrency END,
           key_rate_max = CASE WHEN $6::boolean THEN EXCLUDED.key_rate_max ELSE qs.key_rate_max END,
           key_rate_per_ms = CASE WHEN $6::boolean THEN EXCLUDED.key_rate_per_ms ELSE qs.key_rate_per_ms END
         RETURNING 1),
       cleared AS (DELETE FROM ${s.q}.key_rate_windows w WHERE $6::boolean AND w.queue = $1::text RETURNING 1)
       SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM cleared) AS n, ${s.notify('$9')}::text AS woke, ${s.notify("'s:' || $1::text")}::text AS changed`,
    ),
    /** $1 queue → `n` ended per-key rate windows of the queue deleted (part of `sweepExpired`). */
    sweepWindows: s.def('l_sweep_windows', endedWindows(s, 'w.queue = $1::text')),
    /** → `n` ended per-key rate windows of every queue deleted (the retention runner's round). */
    sweepAllWindows: s.def('l_sweep_all_windows', endedWindows(s, 'true')),
    /** $1 queue → the limit columns of its settings (no row: defaults). */
    getLimits: s.def(
      'l_get_limits',
      `SELECT concurrency_limit, global_concurrency, key_rate_max, key_rate_per_ms FROM ${settings} WHERE queue = $1::text`,
    ),
  };
}
