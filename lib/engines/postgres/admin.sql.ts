import { LATENCY_BUCKETS } from '../../contract/admin.js';
import { countDeltas, dueBucket, foldSometimes } from './counts.sql.js';
import { NOW_MS, type SchemaSql, type Sql } from './schema-sql.js';
import { jobColumns } from './queue.sql.js';

// Histogram columns of `queue_latency` (migration 13): `w0..` wait, `r0..` run, one per bucket of `LATENCY_BOUNDS_MS`.
const W = Array.from({ length: LATENCY_BUCKETS }, (_, i) => `w${i}`);
const R = Array.from({ length: LATENCY_BUCKETS }, (_, i) => `r${i}`);
/** `$9::bigint[], …`: the histogram parameters of `addMinutes`. */
const HIST_PARAMS = Array.from({ length: 2 * LATENCY_BUCKETS }, (_, i) => `$${9 + i}::bigint[]`).join(', ');

/** Admin statements for one schema: keyset pages, bounded counts, throughput minutes. */
export function adminSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  // One index seek per distinct queue of a state's partial index (a loose index scan).
  // `cond` matches a partial index's predicate exactly, so each seek is an index seek.
  const loose = (cond: string) => `(WITH RECURSIVE r AS (
      SELECT (SELECT j.queue FROM ${jobs} j WHERE ${cond} ORDER BY j.queue LIMIT 1) AS q
      UNION ALL
      SELECT (SELECT j.queue FROM ${jobs} j WHERE ${cond} AND j.queue > r.q ORDER BY j.queue LIMIT 1) FROM r WHERE r.q IS NOT NULL
    ) SELECT q FROM r WHERE q IS NOT NULL)`;
  return {
    queueNames: s.def(
      'a_queue_names',
      `${loose("j.state = 'pending' AND NOT j.blocked")} UNION ${loose("j.state = 'processing'")} UNION ${loose("j.state = 'dead'")}
       UNION SELECT DISTINCT queue FROM ${s.q}.queue_minutes UNION SELECT queue FROM ${s.q}.queue_settings ORDER BY 1`,
    ),
    /** $1 queue, $2 at most → the highest pending priority <= $2. */
    nextPriority: s.def(
      'a_next_priority',
      `SELECT j.priority FROM ${jobs} j WHERE j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.priority <= $2::int
       ORDER BY j.priority DESC LIMIT 1`,
    ),
    /** $1 queue, $2 priority, $3 after run_at, $4 after id, $5 limit. */
    pendingOfPriority: s.def(
      'a_pending_of_priority',
      `SELECT ${jobColumns('j')} FROM ${jobs} j
       WHERE j.queue = $1::text AND j.state = 'pending' AND NOT j.blocked AND j.priority = $2::int AND (j.run_at, j.id) > ($3::bigint, $4::bigint)
       ORDER BY j.run_at, j.id LIMIT $5::int`,
    ),
    /** $1 queue, $2 after claimed_until (null: first page), $3 after id, $4 limit. */
    processing: s.def(
      'a_processing',
      `SELECT ${jobColumns('j')} FROM ${jobs} j
       WHERE j.queue = $1::text AND j.state = 'processing'
         AND ($2::bigint IS NULL OR (j.claimed_until, j.id) > ($2::bigint, $3::bigint))
       ORDER BY j.claimed_until, j.id LIMIT $4::int`,
    ),
    /** $1 queue, $2 after id, $3 limit. */
    dead: s.def(
      'a_dead',
      `SELECT ${jobColumns('j')} FROM ${jobs} j WHERE j.queue = $1::text AND j.state = 'dead' AND j.id > $2::bigint ORDER BY j.id LIMIT $3::int`,
    ),
    /** $1 queue, $2 after id, $3 limit. */
    all: s.def(
      'a_all',
      `SELECT ${jobColumns('j')} FROM ${jobs} j WHERE j.queue = $1::text AND j.id > $2::bigint ORDER BY j.id LIMIT $3::int`,
    ),
    /** $1 queue, $2 job id → its failed attempts (migration 14) by number. */
    attempts: s.def(
      'a_attempts',
      `SELECT a.attempt, a.worker_id, a.claimed_at, a.ended_at, a.outcome, a.error FROM ${s.q}.job_attempts a
       WHERE a.job_id = $2::bigint AND a.queue = $1::text ORDER BY a.attempt`,
    ),
    now: s.def('a_now', `SELECT ${NOW_MS} AS ms`),
    /**
     * $1 queue, $2 limit, $3 after id: ids of dead jobs (the dead index), for a bulk redrive through
     * the ordering-aware retryDead. Paged by id: jobs a redrive left dead (conflicts) are not read again.
     */
    deadIds: s.def(
      'a_dead_ids_after',
      `SELECT j.id FROM ${jobs} j WHERE j.queue = $1::text AND j.state = 'dead' AND j.id > $3::bigint ORDER BY j.id LIMIT $2::int`,
    ),
    /** $1 queue → n; with its counter deltas (counts.sql.ts). */
    purgeAllDead: s.def(
      'a_purge_all_dead',
      `WITH d AS (DELETE FROM ${jobs} WHERE queue = $1::text AND state = 'dead' RETURNING 1),
       cnt AS (${countDeltas(s.q, `SELECT $1::text, 'dead', 0, -count(*) FROM d HAVING count(*) > 0`)})
       SELECT count(*) AS n, ${foldSometimes(s.q, 'SELECT $1::text FROM d LIMIT 1')} AS folded FROM d`,
    ),
    /**
     * $1 queues, $2 completed, $3 retried, $4 dead, $5 wait count, $6 wait sum ms, $7 run count,
     * $8 run sum ms, $9.. the wait histogram, then the run histogram (one array per bucket):
     * added to the current minute (database clock), counts and latencies in one statement.
     */
    addMinutes: s.def(
      'a_add_minutes',
      `WITH t AS (SELECT (${NOW_MS} / 60000) * 60000 AS m),
       x AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[],
         ${HIST_PARAMS}) AS x(q, c, r, d, wn, wms, rn, rms, ${[...W, ...R].join(', ')})),
       lat AS (
         INSERT INTO ${s.q}.queue_latency AS l (queue, minute, wait_n, wait_ms, run_n, run_ms, ${[...W, ...R].join(', ')})
         SELECT x.q, t.m, x.wn, x.wms, x.rn, x.rms, ${[...W, ...R].map((c) => `x.${c}`).join(', ')} FROM x, t WHERE x.wn > 0 OR x.rn > 0
         ON CONFLICT (queue, minute) DO UPDATE SET wait_n = l.wait_n + EXCLUDED.wait_n, wait_ms = l.wait_ms + EXCLUDED.wait_ms,
           run_n = l.run_n + EXCLUDED.run_n, run_ms = l.run_ms + EXCLUDED.run_ms, ${[...W, ...R].map((c) => `${c} = l.${c} + EXCLUDED.${c}`).join(', ')}
       )
       INSERT INTO ${s.q}.queue_minutes AS m (queue, minute, completed, retried, dead)
       SELECT x.q, t.m, x.c, x.r, x.d FROM x, t
       ON CONFLICT (queue, minute) DO UPDATE SET completed = m.completed + EXCLUDED.completed,
         retried = m.retried + EXCLUDED.retried, dead = m.dead + EXCLUDED.dead`,
    ),
    /** $1 retention ms. */
    pruneMinutes: s.def(
      'a_prune_minutes',
      `WITH l AS (DELETE FROM ${s.q}.queue_latency WHERE minute < ${NOW_MS} - $1::bigint)
       DELETE FROM ${s.q}.queue_minutes WHERE minute < ${NOW_MS} - $1::bigint`,
    ),
    /** $1 since, $2 queue or null. */
    minutes: s.def(
      'a_minutes',
      `SELECT m.queue, m.minute, m.completed, m.retried, m.dead,
         coalesce(l.wait_n, 0) AS wait_n, coalesce(l.wait_ms, 0) AS wait_ms, coalesce(l.run_n, 0) AS run_n, coalesce(l.run_ms, 0) AS run_ms,
         ${[...W, ...R].map((c) => `coalesce(l.${c}, 0) AS ${c}`).join(', ')}
       FROM ${s.q}.queue_minutes m LEFT JOIN ${s.q}.queue_latency l ON l.queue = m.queue AND l.minute = m.minute
       WHERE m.minute >= $1::bigint AND ($2::text IS NULL OR m.queue = $2::text) ORDER BY m.minute, m.queue`,
    ),
    /** $1 after name or null, $2 limit. */
    streamHeads: s.def(
      'a_stream_heads',
      `SELECT stream, last_offset FROM ${s.q}.stream_heads WHERE ($1::text IS NULL OR stream > $1::text) ORDER BY stream LIMIT $2::int`,
    ),
    /** $1 streams. */
    streamOffsets: s.def(
      'a_stream_offsets',
      `SELECT stream, consumer, saved FROM ${s.q}.stream_offsets WHERE stream = ANY($1::text[]) ORDER BY stream, consumer`,
    ),
    /**
     * $1 queue, $2 id, $3 payload text or null, $4 priority or null, $5 run_at or null, $6 wake payload → n, woke.
     * The row is locked first, so the old run_at (the due bucket its count leaves) is the one replaced.
     */
    editPending: s.def(
      'a_edit_pending',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       o AS (SELECT j.id, j.run_at FROM ${jobs} j WHERE j.queue = $1::text AND j.id = $2::bigint AND j.state = 'pending' FOR UPDATE),
       u AS (
         UPDATE ${jobs} j SET payload = coalesce($3::json, j.payload), priority = coalesce($4::int, j.priority), run_at = coalesce($5::bigint, j.run_at)
         FROM o WHERE j.id = o.id AND j.state = 'pending'
         RETURNING o.run_at AS old_at, j.run_at AS new_at, j.blocked),
       cnt AS (${countDeltas(
         s.q,
         `SELECT $1::text, 'pending', x.b, sum(x.n) FROM (
            SELECT ${dueBucket("'pending'", 'u.old_at', 't.ms')} AS b, -1 AS n FROM u, t
            UNION ALL SELECT ${dueBucket("'pending'", 'u.new_at', 't.ms')}, 1 FROM u, t
          ) x GROUP BY x.b HAVING sum(x.n) <> 0`,
       )})
       SELECT (SELECT count(*) FROM u) AS n, (SELECT ${s.notify('$6')}::text FROM u WHERE NOT u.blocked) AS woke`,
    ),
    /** $1 rows at most: processing jobs by worker and queue (the processing index), with the database clock. */
    workers: s.def(
      'a_workers',
      `SELECT coalesce(p.worker_id, '') AS worker_id, p.queue, count(*) AS jobs, min(p.claimed_until) AS low, max(p.claimed_until) AS high, ${NOW_MS} AS now
       FROM (SELECT j.worker_id, j.queue, j.claimed_until FROM ${jobs} j WHERE j.state = 'processing' LIMIT $1::int) p
       GROUP BY 1, 2 ORDER BY 1, 2`,
    ),
    /** $1 node id, $2 info JSON: the node's heartbeat row, stamped with the database clock. */
    nodeHeartbeat: s.def(
      'a_node_heartbeat',
      `INSERT INTO ${s.q}.nodes (node_id, info, heartbeat_at) VALUES ($1::text, $2::text, ${NOW_MS})
       ON CONFLICT (node_id) DO UPDATE SET info = EXCLUDED.info, heartbeat_at = EXCLUDED.heartbeat_at`,
    ),
    /** $1 rows at most: the nodes' heartbeat rows by id, with the database clock. */
    nodes: s.def(
      'a_nodes',
      `SELECT n.node_id, n.info, n.heartbeat_at, ${NOW_MS} AS now FROM ${s.q}.nodes n ORDER BY n.node_id LIMIT $1::int`,
    ),
    /** $1 worker id, $2 processing rows scanned at most, $3 limit: the jobs it holds, by queue then id. */
    heldBy: s.def(
      'a_held_by',
      `SELECT p.* FROM (SELECT ${jobColumns('j')}, j.worker_id AS held_by FROM ${jobs} j WHERE j.state = 'processing' LIMIT $2::int) p
       WHERE p.held_by = $1::text ORDER BY p.queue, p.id LIMIT $3::int`,
    ),
    /** $1 node id: deletes its heartbeat row. */
    forgetNode: s.def('a_forget_node', `DELETE FROM ${s.q}.nodes WHERE node_id = $1::text`),
    /** $1 outbox, $2 before delivered_at (null: first page), $3 before message id, $4 limit: latest delivery first. */
    receipts: s.def(
      'a_receipts',
      `SELECT r.message_id, r.receipt::text AS receipt, r.delivered_at FROM ${s.q}.outbox_receipts r
       WHERE r.outbox = $1::text AND ($2::bigint IS NULL OR (r.delivered_at, r.message_id) < ($2::bigint, $3::bigint))
       ORDER BY r.delivered_at DESC, r.message_id DESC LIMIT $4::int`,
    ),
    /** $1 job, $2 limit → the dependency edges below the job, breadth first, with each dependency's state (live row, else outcome record). */
    flowEdges: s.def(
      'a_flow_edges',
      `WITH RECURSIVE d(job_id, dep_id, dep_queue) AS (
         SELECT e.job_id, e.dep_id, e.dep_queue FROM ${s.q}.job_deps e WHERE e.job_id = $1::bigint
         UNION SELECT e.job_id, e.dep_id, e.dep_queue FROM ${s.q}.job_deps e JOIN d ON e.job_id = d.dep_id)
       SELECT d.job_id, d.dep_id, d.dep_queue, coalesce(j.state, o.state) AS state, j.last_error, w.policy
       FROM (SELECT * FROM d LIMIT $2::int) d LEFT JOIN ${jobs} j ON j.id = d.dep_id
       LEFT JOIN ${s.q}.job_outcomes o ON o.id = d.dep_id LEFT JOIN ${s.q}.job_waits w ON w.job_id = d.dep_id`,
    ),
    /** $1 job → the jobs waiting for it (at most 50), and its own wait row. */
    flowParents: s.def(
      'a_flow_parents',
      `SELECT e.job_id AS id, w.queue FROM ${s.q}.job_deps e JOIN ${s.q}.job_waits w ON w.job_id = e.job_id
       WHERE e.dep_id = $1::bigint ORDER BY e.job_id LIMIT 50`,
    ),
    /** $1 job → its wait row (pending count, policy). */
    flowWait: s.def('a_flow_wait', `SELECT pending, policy FROM ${s.q}.job_waits WHERE job_id = $1::bigint`),
    /** $1 job ids → those waiting for dependencies, with the count not ended. */
    waitingOn: s.def(
      'a_waiting_on',
      `SELECT w.job_id, w.pending FROM ${s.q}.job_waits w JOIN ${jobs} j ON j.id = w.job_id
       WHERE w.job_id = ANY($1::bigint[]) AND j.state = 'pending' AND j.blocked AND w.pending > 0`,
    ),
    /** $1 name. */
    lock: s.def('a_lock', `SELECT owner, expires_at, ${NOW_MS} AS now FROM ${s.q}.locks WHERE name = $1::text`),
  } satisfies Record<string, Sql>;
}

export type AdminSql = ReturnType<typeof adminSql>;
