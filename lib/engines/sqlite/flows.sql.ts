// Job flows on SQLite (docs/flows.md): the statements of flows.ts, as PostgreSQL's flows.sql.ts holds those of its flows.ts.

// The insert's statements take positional parameters: a TypeORM query runner binds no names.
export const WHERE_ARE = `SELECT j.id, j.queue, j.state FROM json_each(?) x JOIN __alkstore_jobs j ON j.id = x.value
  UNION ALL SELECT o.id, o.queue, o.state FROM json_each(?) x JOIN __alkstore_job_outcomes o ON o.id = x.value`;
export const MARK_LIVE = `UPDATE __alkstore_jobs SET headers = json_set(coalesce(headers, '{}'), '$."alkstore-flow"', '1')
  WHERE id IN (SELECT value FROM json_each(?)) AND state IN ('pending', 'processing') RETURNING id`;
export const INSERT_EDGE = `INSERT INTO __alkstore_job_deps (job_id, dep_id, dep_queue, done, outcome) VALUES (?, ?, ?, ?, ?)`;
export const INSERT_WAIT = `INSERT INTO __alkstore_job_waits (job_id, queue, pending, policy) VALUES (?, ?, ?, ?)`;
export const BLOCK = `UPDATE __alkstore_jobs SET blocked = 1 WHERE id = ? AND state = 'pending'`;
export const EDGE_COLS = `e.job_id, e.dep_id, e.dep_queue, j.state AS jstate, j.last_error, o.state AS ostate`;
export const EDGES_OF = `SELECT ${EDGE_COLS} FROM __alkstore_job_deps e LEFT JOIN __alkstore_jobs j ON j.id = e.dep_id LEFT JOIN __alkstore_job_outcomes o ON o.id = e.dep_id
  WHERE e.dep_id IN (SELECT value FROM json_each(@ids)) AND e.done = 0 ORDER BY e.job_id, e.dep_id`;
export const FINISHED_EDGES = `SELECT ${EDGE_COLS} FROM __alkstore_job_deps e LEFT JOIN __alkstore_jobs j ON j.id = e.dep_id LEFT JOIN __alkstore_job_outcomes o ON o.id = e.dep_id
  WHERE e.dep_queue = @queue AND e.done = 0 AND (j.id IS NULL OR j.state = 'dead') ORDER BY e.job_id, e.dep_id LIMIT @limit`;
export const MARK_DONE = `UPDATE __alkstore_job_deps SET done = 1, outcome = @outcome WHERE job_id = @job AND dep_id = @dep AND done = 0`;
export const COUNT_DOWN = `UPDATE __alkstore_job_waits SET pending = pending - 1 WHERE job_id = @job AND (@outcome = 'completed' OR policy <> 'fail') RETURNING pending, queue`;
export const UNBLOCK = `UPDATE __alkstore_jobs SET blocked = 0 WHERE id = @job AND state = 'pending' AND blocked = 1`;
export const FAIL_WAITING = `UPDATE __alkstore_jobs SET state = 'dead', died_at = @now, last_error = @error, blocked = 0 WHERE id = @job AND state = 'pending' RETURNING queue`;
export const PENDING_OF = `SELECT w.pending FROM __alkstore_job_waits w JOIN __alkstore_jobs j ON j.id = w.job_id WHERE w.job_id = ? AND j.state = 'pending' AND j.blocked = 1 AND w.pending > 0`;
export const CHILD_RESULTS = `SELECT e.dep_id, e.dep_queue, e.outcome, o.state AS ostate, o.result, j.state AS jstate, j.last_error, w.policy
  FROM __alkstore_job_deps e LEFT JOIN __alkstore_job_outcomes o ON o.id = e.dep_id LEFT JOIN __alkstore_jobs j ON j.id = e.dep_id LEFT JOIN __alkstore_job_waits w ON w.job_id = e.job_id
  WHERE e.job_id = ? ORDER BY e.dep_id`;
export const LIVE_DESCENDANTS = `WITH RECURSIVE d(id) AS (SELECT dep_id FROM __alkstore_job_deps WHERE job_id = ? UNION SELECT e.dep_id FROM __alkstore_job_deps e JOIN d ON e.job_id = d.id)
  SELECT j.id, j.queue FROM d JOIN __alkstore_jobs j ON j.id = d.id WHERE j.state IN ('pending', 'processing') ORDER BY j.id`;
export const PURGE_WAITS = `DELETE FROM __alkstore_job_waits WHERE queue = @queue AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs j WHERE j.id = job_id AND j.state IN ('pending', 'processing')) RETURNING job_id`;
export const PURGE_EDGES = `DELETE FROM __alkstore_job_deps WHERE job_id = ?`;
