import { LATENCY_BUCKETS } from '../../contract/admin.js';
import { JOB_COLUMNS } from './queue.sql.js';

/** SQL of the admin operations: keyset pages over the state indexes, bounded counts, throughput minutes. */

/** The next queue name after @after in one state's partial index (a loose index scan, one seek per queue). */
export const NEXT_PENDING_QUEUE = `SELECT queue FROM __alkstore_jobs WHERE state = 'pending' AND blocked = 0 AND queue > @after ORDER BY queue LIMIT 1`;
export const NEXT_PROCESSING_QUEUE = `SELECT queue FROM __alkstore_jobs WHERE state = 'processing' AND queue > @after ORDER BY queue LIMIT 1`;
export const NEXT_DEAD_QUEUE = `SELECT queue FROM __alkstore_jobs WHERE state = 'dead' AND queue > @after ORDER BY queue LIMIT 1`;
export const OTHER_QUEUES =
  'SELECT DISTINCT queue FROM __alkstore_queue_minutes UNION SELECT queue FROM __alkstore_queue_settings';

export const NEXT_PRIORITY = `SELECT priority FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
  WHERE queue = @queue AND state = 'pending' AND blocked = 0 AND priority <= @atMost ORDER BY priority DESC LIMIT 1`;
export const PENDING_OF_PRIORITY = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
  WHERE queue = @queue AND state = 'pending' AND blocked = 0 AND priority = @priority AND (run_at, id) > (@runAt, @id)
  ORDER BY run_at, id LIMIT @limit`;
export const PROCESSING = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
  WHERE queue = @queue AND state = 'processing' AND (@after IS NULL OR (claimed_until, id) > (@after, @id))
  ORDER BY claimed_until, id LIMIT @limit`;
export const DEAD = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_dead
  WHERE queue = @queue AND state = 'dead' AND id > @after ORDER BY id LIMIT @limit`;
export const ALL = `SELECT ${JOB_COLUMNS} FROM __alkstore_jobs WHERE queue = @queue AND id > @after ORDER BY id LIMIT @limit`;

export const DEAD_IDS = `SELECT id FROM __alkstore_jobs INDEXED BY __alkstore_jobs_dead WHERE queue = @queue AND state = 'dead' ORDER BY id`;
export const PURGE_ALL_DEAD = `DELETE FROM __alkstore_jobs WHERE queue = @queue AND state = 'dead'`;

export const ADD_MINUTE = `INSERT INTO __alkstore_queue_minutes (queue, minute, completed, retried, dead)
  VALUES (@queue, @minute, @completed, @retried, @dead)
  ON CONFLICT (queue, minute) DO UPDATE SET completed = completed + excluded.completed,
    retried = retried + excluded.retried, dead = dead + excluded.dead`;

// Histogram columns of __alkstore_queue_latency (step 13): `w0..` wait, `r0..` run, one per bucket of LATENCY_BOUNDS_MS.
const HIST = [
  ...Array.from({ length: LATENCY_BUCKETS }, (_, i) => `w${i}`),
  ...Array.from({ length: LATENCY_BUCKETS }, (_, i) => `r${i}`),
];

/** The minute's wait and run latencies, added in the flush's write transaction with ADD_MINUTE. */
export const ADD_LATENCY = `INSERT INTO __alkstore_queue_latency (queue, minute, wait_n, wait_ms, run_n, run_ms, ${HIST.join(', ')})
  VALUES (@queue, @minute, @waitN, @waitMs, @runN, @runMs, ${HIST.map((c) => `@${c}`).join(', ')})
  ON CONFLICT (queue, minute) DO UPDATE SET wait_n = wait_n + excluded.wait_n, wait_ms = wait_ms + excluded.wait_ms,
    run_n = run_n + excluded.run_n, run_ms = run_ms + excluded.run_ms, ${HIST.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`;
export const PRUNE_MINUTES = 'DELETE FROM __alkstore_queue_minutes WHERE minute < @now - @retention';
export const PRUNE_LATENCY = 'DELETE FROM __alkstore_queue_latency WHERE minute < @now - @retention';
export const MINUTES = `SELECT m.queue, m.minute, m.completed, m.retried, m.dead,
    coalesce(l.wait_n, 0) AS wait_n, coalesce(l.wait_ms, 0) AS wait_ms, coalesce(l.run_n, 0) AS run_n, coalesce(l.run_ms, 0) AS run_ms,
    ${HIST.map((c) => `coalesce(l.${c}, 0) AS ${c}`).join(', ')}
  FROM __alkstore_queue_minutes m LEFT JOIN __alkstore_queue_latency l ON l.queue = m.queue AND l.minute = m.minute
  WHERE m.minute >= @since AND (@queue IS NULL OR m.queue = @queue) ORDER BY m.minute, m.queue`;

export const STREAM_HEADS =
  'SELECT stream, last_seq FROM __alkstore_stream_heads WHERE (@after IS NULL OR stream > @after) ORDER BY stream LIMIT @limit';
export const STREAM_OFFSETS = 'SELECT consumer, seq FROM __alkstore_offsets WHERE stream = ? ORDER BY consumer';
export const LOCK = 'SELECT owner, expires_at FROM __alkstore_locks WHERE name = ?';

/** A pending job's payload, priority or run time (null: unchanged); the count triggers follow a run_at change. */
export const EDIT_PENDING = `UPDATE __alkstore_jobs SET payload = coalesce(@payload, payload), priority = coalesce(@priority, priority), run_at = coalesce(@runAt, run_at)
  WHERE queue = @queue AND id = @id AND state = 'pending' RETURNING blocked`;
/** Processing jobs by worker and queue, from at most @limit of them (the processing index). */
export const WORKERS = `SELECT coalesce(worker_id, '') AS workerId, queue, count(*) AS jobs, min(claimed_until) AS low, max(claimed_until) AS high
  FROM (SELECT worker_id, queue, claimed_until FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing WHERE state = 'processing' LIMIT @limit)
  GROUP BY 1, 2 ORDER BY 1, 2`;
/** An outbox's receipts, latest delivery first, below the keyset (@at, @id) when @at is not null. */
export const RECEIPTS = `SELECT message_id AS messageId, receipt AS receiptText, delivered_at AS deliveredAt FROM __alkstore_outbox_receipts
  WHERE outbox = @outbox AND (@at IS NULL OR (delivered_at, message_id) < (@at, @id))
  ORDER BY delivered_at DESC, message_id DESC LIMIT @limit`;

/** A job's failed attempts (step 14) by number. */
export const ATTEMPTS = `SELECT attempt, worker_id, claimed_at, ended_at, outcome, error
  FROM __alkstore_job_attempts WHERE job_id = @id AND queue = @queue ORDER BY attempt`;

/** The dependency edges below @job, breadth first, at most @limit, with each dependency's state (live row, else outcome record). */
export const FLOW_EDGES = `WITH RECURSIVE d(job_id, dep_id, dep_queue) AS (
    SELECT e.job_id, e.dep_id, e.dep_queue FROM __alkstore_job_deps e WHERE e.job_id = @job
    UNION SELECT e.job_id, e.dep_id, e.dep_queue FROM __alkstore_job_deps e JOIN d ON e.job_id = d.dep_id)
  SELECT d.job_id, d.dep_id, d.dep_queue, coalesce(j.state, o.state) AS state, j.last_error, w.policy
  FROM (SELECT * FROM d LIMIT @limit) d LEFT JOIN __alkstore_jobs j ON j.id = d.dep_id
  LEFT JOIN __alkstore_job_outcomes o ON o.id = d.dep_id LEFT JOIN __alkstore_job_waits w ON w.job_id = d.dep_id`;
/** The jobs waiting for @job, at most 50. */
export const FLOW_PARENTS = `SELECT e.job_id AS id, w.queue FROM __alkstore_job_deps e JOIN __alkstore_job_waits w ON w.job_id = e.job_id
  WHERE e.dep_id = @job ORDER BY e.job_id LIMIT 50`;
/** @job's wait row. */
export const FLOW_WAIT = `SELECT pending, policy FROM __alkstore_job_waits WHERE job_id = @job`;
/** Of the ids in the JSON array @ids, those waiting for dependencies, with the count not ended. */
export const WAITING_ON = `SELECT w.job_id, w.pending FROM __alkstore_job_waits w JOIN __alkstore_jobs j ON j.id = w.job_id
  WHERE w.job_id IN (SELECT value FROM json_each(@ids)) AND j.state = 'pending' AND j.blocked = 1 AND w.pending > 0`;

/** @nodeId, @info, @now: a node's heartbeat row. */
export const NODE_HEARTBEAT = `INSERT INTO __alkstore_nodes (node_id, info, heartbeat_at) VALUES (@nodeId, @info, @now)
  ON CONFLICT (node_id) DO UPDATE SET info = excluded.info, heartbeat_at = excluded.heartbeat_at`;
/** @limit: the nodes' heartbeat rows by id. */
export const NODES = `SELECT node_id AS nodeId, info, heartbeat_at AS heartbeatAt FROM __alkstore_nodes ORDER BY node_id LIMIT @limit`;
export const FORGET_NODE = `DELETE FROM __alkstore_nodes WHERE node_id = ?`;
/** The jobs @worker holds, from at most @scan processing jobs (the processing index), by queue then id. */
export const HELD_BY = `SELECT * FROM (SELECT ${JOB_COLUMNS}, worker_id AS heldBy FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
  WHERE state = 'processing' LIMIT @scan) WHERE heldBy = @worker ORDER BY queue, id LIMIT @limit`;
