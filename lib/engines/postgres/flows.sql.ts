import { countDeltas, dueBucket } from './counts.sql.js';
import { NOW_MS, type SchemaSql } from './schema-sql.js';

// Job flows on PostgreSQL (SPEC §11, docs/flows.md): the statements of flows.ts. Only flows run
// them; the plain enqueue, claim and ack statements are those of queue.sql.ts, unchanged.

/** The statements of flows for one schema. */
export function flowsSql(s: SchemaSql) {
  const jobs = `${s.q}.jobs`;
  const deps = `${s.q}.job_deps`;
  const waits = `${s.q}.job_waits`;
  const outcomes = `${s.q}.job_outcomes`;
  const edgeCols = `e.job_id, e.dep_id, e.dep_queue, j.state AS jstate, j.last_error, o.state AS ostate`;
  return {
    /** $1 ids → where each existing id is: (id, queue, state) from the jobs and the outcome records. */
    whereAre: s.def(
      'f_where_are',
      `SELECT j.id, j.queue, j.state FROM ${jobs} j WHERE j.id = ANY($1::bigint[])
       UNION ALL SELECT o.id, o.queue, o.state FROM ${outcomes} o WHERE o.id = ANY($1::bigint[])`,
    ),
    /**
     * $1 ids: the live ones get the flow header and a row lock until commit (an ack of one waits
     * for this transaction, then sees its edges) → the ids that were live.
     */
    markLive: s.def(
      'f_mark_live',
      `UPDATE ${jobs} SET headers = (coalesce(headers::jsonb, '{}'::jsonb) || '{"alkstore-flow":"1"}'::jsonb)::json
       WHERE id = ANY($1::bigint[]) AND state IN ('pending', 'processing') RETURNING id`,
    ),
    /** $1 job, $2 dep ids, $3 dep queues, $4 done flags, $5 outcomes. */
    insertEdges: s.def(
      'f_insert_edges',
      `INSERT INTO ${deps} (job_id, dep_id, dep_queue, done, outcome)
       SELECT $1::bigint, x.d, x.q, x.done, x.o FROM unnest($2::bigint[], $3::text[], $4::boolean[], $5::text[]) AS x(d, q, done, o)`,
    ),
    /** $1 job, $2 queue, $3 pending, $4 policy; holds the job back while pending > 0. */
    insertWait: s.def(
      'f_insert_wait',
      `WITH w AS (INSERT INTO ${waits} (job_id, queue, pending, policy) VALUES ($1::bigint, $2::text, $3::int, $4::text) RETURNING job_id)
       UPDATE ${jobs} j SET blocked = true FROM w WHERE j.id = w.job_id AND $3::int > 0 AND j.state = 'pending'`,
    ),
    /** $1 dep ids → the unsettled edges from them, locked, with each dependency's state. */
    edgesOf: s.def(
      'f_edges_of',
      `SELECT ${edgeCols} FROM ${deps} e LEFT JOIN ${jobs} j ON j.id = e.dep_id LEFT JOIN ${outcomes} o ON o.id = e.dep_id
       WHERE e.dep_id = ANY($1::bigint[]) AND NOT e.done ORDER BY e.job_id, e.dep_id FOR UPDATE OF e`,
    ),
    /** The unsettled edges of queue $1's dependencies that are no longer live (the sweep's repair), at most $2. */
    finishedEdges: s.def(
      'f_finished_edges',
      `SELECT ${edgeCols} FROM ${deps} e LEFT JOIN ${jobs} j ON j.id = e.dep_id LEFT JOIN ${outcomes} o ON o.id = e.dep_id
       WHERE e.dep_queue = $1::text AND NOT e.done AND (j.id IS NULL OR j.state = 'dead')
       ORDER BY e.job_id, e.dep_id LIMIT $2::int FOR UPDATE OF e SKIP LOCKED`,
    ),
    /**
     * $1 job, $2 dep, $3 the dependency's outcome: settles the edge and, when it counts down (completed, or a
     * policy that goes on), the job's pending count → `marked` (0: settled before), `pending` and `queue` (null: no count-down).
     */
    settleEdge: s.def(
      'f_settle_edge',
      `WITH m AS (UPDATE ${deps} SET done = true, outcome = $3::text WHERE job_id = $1::bigint AND dep_id = $2::bigint AND NOT done RETURNING job_id),
       c AS (UPDATE ${waits} w SET pending = w.pending - 1 FROM m WHERE w.job_id = m.job_id AND ($3::text = 'completed' OR w.policy <> 'fail') RETURNING w.pending, w.queue)
       SELECT (SELECT count(*) FROM m) AS marked, c.pending, c.queue FROM (SELECT 1) AS one LEFT JOIN c ON true`,
    ),
    /** $1 job, $2 queue wake → `woke` when the job became claimable. */
    unblock: s.def(
      'f_unblock',
      `WITH u AS (UPDATE ${jobs} SET blocked = false WHERE id = $1::bigint AND state = 'pending' AND blocked RETURNING id)
       SELECT ${s.notify('$2')}::text AS woke FROM u`,
    ),
    /** $1 job, $2 last error → the queue when the waiting job went dead. */
    failWaiting: s.def(
      'f_fail_waiting',
      `WITH t AS (SELECT ${NOW_MS} AS ms),
       d AS (UPDATE ${jobs} j SET state = 'dead', died_at = t.ms, last_error = $2::text, blocked = false
             FROM t WHERE j.id = $1::bigint AND j.state = 'pending' RETURNING j.queue, j.run_at),
       cnt AS (${countDeltas(s.q, `SELECT d.queue, 'pending', ${dueBucket("'pending'", 'd.run_at', 't.ms')}, -1 FROM d, t UNION ALL SELECT d.queue, 'dead', 0, 1 FROM d`)})
       SELECT d.queue FROM d`,
    ),
    /** $1 job → its pending dependency count while it waits. */
    pendingOf: s.def(
      'f_pending_of',
      `SELECT w.pending FROM ${waits} w JOIN ${jobs} j ON j.id = w.job_id WHERE w.job_id = $1::bigint AND j.state = 'pending' AND j.blocked AND w.pending > 0`,
    ),
    /** $1 job → its dependencies with what the handler reads. */
    childResults: s.def(
      'f_child_results',
      `SELECT e.dep_id, e.dep_queue, e.outcome, o.state AS ostate, o.result::text AS result, j.state AS jstate, j.last_error, w.policy
       FROM ${deps} e LEFT JOIN ${outcomes} o ON o.id = e.dep_id LEFT JOIN ${jobs} j ON j.id = e.dep_id LEFT JOIN ${waits} w ON w.job_id = e.job_id
       WHERE e.job_id = $1::bigint ORDER BY e.dep_id`,
    ),
    /** $1 job → every descendant (dependencies, theirs, …) still live, with its queue. */
    liveDescendants: s.def(
      'f_live_descendants',
      `WITH RECURSIVE d(id) AS (SELECT dep_id FROM ${deps} WHERE job_id = $1::bigint UNION SELECT e.dep_id FROM ${deps} e JOIN d ON e.job_id = d.id)
       SELECT j.id, j.queue FROM d JOIN ${jobs} j ON j.id = d.id WHERE j.state IN ('pending', 'processing') ORDER BY j.id`,
    ),
    /** Forgets the flow rows of queue $1's jobs that no longer wait or run → n. */
    purge: s.def(
      'f_purge',
      `WITH w AS (DELETE FROM ${waits} w WHERE w.queue = $1::text AND NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.id = w.job_id AND j.state IN ('pending', 'processing')) RETURNING job_id),
       e AS (DELETE FROM ${deps} e USING w WHERE e.job_id = w.job_id RETURNING 1)
       SELECT count(*) AS n FROM w`,
    ),
  };
}

export type FlowsSql = ReturnType<typeof flowsSql>;
