import { badDependency, dependencyDiedError, flowTree, type ChildResult, type FlowNode, type FlowPlan } from '../../contract/flows.js';
import { queueWakeChannel } from '../../contract/names.js';
import { resultWakeChannel } from '../../contract/results.js';
import { childResults, edgeOutcome, type ChildRow, type EdgeRow } from '../shared/flows.js';
import type { SqliteConn } from './connection.js';
import { insertJobs } from './queue-ops.js';
import type { WriteCtx } from './writer.js';

// Job flows on SQLite (SPEC §11, docs/flows.md): each function runs inside one write transaction,
// so a dependency's end and its dependents' unblock commit together. The same rules and statements
// as PostgreSQL's flows.sql.ts / flows.ts.

const WHERE_ARE = `SELECT j.id, j.queue, j.state FROM json_each(@ids) x JOIN __alkstore_jobs j ON j.id = x.value
  UNION ALL SELECT o.id, o.queue, o.state FROM json_each(@ids) x JOIN __alkstore_job_outcomes o ON o.id = x.value`;
const MARK_LIVE = `UPDATE __alkstore_jobs SET headers = json_set(coalesce(headers, '{}'), '$."alkstore-flow"', '1')
  WHERE id IN (SELECT value FROM json_each(@ids)) AND state IN ('pending', 'processing') RETURNING id`;
const INSERT_EDGE = `INSERT INTO __alkstore_job_deps (job_id, dep_id, dep_queue, done, outcome) VALUES (@job, @dep, @queue, @done, @outcome)`;
const INSERT_WAIT = `INSERT INTO __alkstore_job_waits (job_id, queue, pending, policy) VALUES (@job, @queue, @pending, @policy)`;
const BLOCK = `UPDATE __alkstore_jobs SET blocked = 1 WHERE id = @job AND state = 'pending'`;
const EDGE_COLS = `e.job_id, e.dep_id, e.dep_queue, j.state AS jstate, j.last_error, o.state AS ostate`;
const EDGES_OF = `SELECT ${EDGE_COLS} FROM __alkstore_job_deps e LEFT JOIN __alkstore_jobs j ON j.id = e.dep_id LEFT JOIN __alkstore_job_outcomes o ON o.id = e.dep_id
  WHERE e.dep_id IN (SELECT value FROM json_each(@ids)) AND e.done = 0 ORDER BY e.job_id, e.dep_id`;
const FINISHED_EDGES = `SELECT ${EDGE_COLS} FROM __alkstore_job_deps e LEFT JOIN __alkstore_jobs j ON j.id = e.dep_id LEFT JOIN __alkstore_job_outcomes o ON o.id = e.dep_id
  WHERE e.dep_queue = @queue AND e.done = 0 AND (j.id IS NULL OR j.state = 'dead') ORDER BY e.job_id, e.dep_id LIMIT @limit`;
const MARK_DONE = `UPDATE __alkstore_job_deps SET done = 1, outcome = @outcome WHERE job_id = @job AND dep_id = @dep AND done = 0`;
const COUNT_DOWN = `UPDATE __alkstore_job_waits SET pending = pending - 1 WHERE job_id = @job AND (@outcome = 'completed' OR policy <> 'fail') RETURNING pending, queue`;
const UNBLOCK = `UPDATE __alkstore_jobs SET blocked = 0 WHERE id = @job AND state = 'pending' AND blocked = 1`;
const FAIL_WAITING = `UPDATE __alkstore_jobs SET state = 'dead', died_at = @now, last_error = @error, blocked = 0 WHERE id = @job AND state = 'pending' RETURNING queue`;
const PENDING_OF = `SELECT w.pending FROM __alkstore_job_waits w JOIN __alkstore_jobs j ON j.id = w.job_id WHERE w.job_id = ? AND j.state = 'pending' AND j.blocked = 1 AND w.pending > 0`;
const CHILD_RESULTS = `SELECT e.dep_id, e.dep_queue, e.outcome, o.state AS ostate, o.result, j.state AS jstate, j.last_error, w.policy
  FROM __alkstore_job_deps e LEFT JOIN __alkstore_job_outcomes o ON o.id = e.dep_id LEFT JOIN __alkstore_jobs j ON j.id = e.dep_id LEFT JOIN __alkstore_job_waits w ON w.job_id = e.job_id
  WHERE e.job_id = ? ORDER BY e.dep_id`;
const LIVE_DESCENDANTS = `WITH RECURSIVE d(id) AS (SELECT dep_id FROM __alkstore_job_deps WHERE job_id = ? UNION SELECT e.dep_id FROM __alkstore_job_deps e JOIN d ON e.job_id = d.id)
  SELECT j.id, j.queue FROM d JOIN __alkstore_jobs j ON j.id = d.id WHERE j.state IN ('pending', 'processing') ORDER BY j.id`;
const PURGE_WAITS = `DELETE FROM __alkstore_job_waits WHERE queue = @queue AND NOT EXISTS (SELECT 1 FROM __alkstore_jobs j WHERE j.id = job_id AND j.state IN ('pending', 'processing')) RETURNING job_id`;
const PURGE_EDGES = `DELETE FROM __alkstore_job_deps WHERE job_id = ?`;

/** Inserts a checked flow: refuses a missing, dead or cancelled dependency id before any write. */
export function insertFlow(ctx: WriteCtx, plan: FlowPlan): FlowNode {
  const queueOf = new Map<number, string>();
  if (plan.existing.length > 0) {
    const rows = ctx.conn.stmt(WHERE_ARE).all({ ids: JSON.stringify(plan.existing) }) as { id: number; queue: string; state: string }[];
    const state = new Map(rows.map((x) => [x.id, x.state]));
    for (const x of rows) queueOf.set(x.id, x.queue);
    for (const id of plan.existing) {
      const s = state.get(id);
      if (s === undefined) throw badDependency(id, 'missing');
      if (s === 'dead' || s === 'cancelled') throw badDependency(id, s);
    }
  }
  const ids = plan.jobs.map((j) => insertJobs(ctx, j.queue, [j.text], j.stamp)[0]!);
  plan.jobs.forEach((j, k) => queueOf.set(ids[k]!, j.queue));
  const depIds = [...new Set(plan.jobs.flatMap((j) => j.deps.map((d) => ('node' in d ? ids[d.node]! : d.id))))];
  if (depIds.length === 0) return flowTree(plan, ids);
  const live = new Set((ctx.conn.stmt(MARK_LIVE).all({ ids: JSON.stringify(depIds) }) as { id: number }[]).map((x) => x.id));
  const done = new Set(depIds.filter((id) => !live.has(id)));
  for (let k = 0; k < plan.jobs.length; k++) {
    const j = plan.jobs[k]!;
    if (j.deps.length === 0) continue;
    const ds = [...new Set(j.deps.map((d) => ('node' in d ? ids[d.node]! : d.id)))];
    for (const d of ds) ctx.conn.stmt(INSERT_EDGE).run({ job: ids[k], dep: d, queue: queueOf.get(d) ?? j.queue, done: done.has(d) ? 1 : 0, outcome: done.has(d) ? 'completed' : null });
    const pending = ds.filter((d) => !done.has(d)).length;
    ctx.conn.stmt(INSERT_WAIT).run({ job: ids[k], queue: j.queue, pending, policy: j.policy });
    if (pending > 0) ctx.conn.stmt(BLOCK).run({ job: ids[k] });
  }
  return flowTree(plan, ids);
}

/** Settles the edges from dependencies `depIds` that are no longer live (see PostgreSQL's `settle`). */
export function settle(ctx: WriteCtx, depIds: readonly number[]): void {
  let ids = [...depIds];
  while (ids.length > 0) ids = settleEdges(ctx, ctx.conn.stmt(EDGES_OF).all({ ids: JSON.stringify(ids) }) as EdgeRow[]);
}

/** The sweep's repair: settles up to `limit` edges of `queue`'s dependencies that ended without settling. */
export function settleFinished(ctx: WriteCtx, queue: string, limit = 1000): number {
  const rows = ctx.conn.stmt(FINISHED_EDGES).all({ queue, limit }) as EdgeRow[];
  settle(ctx, settleEdges(ctx, rows));
  return rows.length;
}

function settleEdges(ctx: WriteCtx, rows: readonly EdgeRow[]): number[] {
  const died: number[] = [];
  for (const e of rows) {
    const out = edgeOutcome(e);
    if (out === 'live') continue;
    if (ctx.conn.stmt(MARK_DONE).run({ job: e.job_id, dep: e.dep_id, outcome: out }).changes === 0) continue;
    const row = ctx.conn.stmt(COUNT_DOWN).get({ job: e.job_id, outcome: out }) as { pending: number; queue: string } | undefined;
    if (row !== undefined) {
      if (row.pending === 0 && ctx.conn.stmt(UNBLOCK).run({ job: e.job_id }).changes > 0) ctx.wake(queueWakeChannel(row.queue));
      continue;
    }
    const error = dependencyDiedError(Number(e.dep_id), e.dep_queue, out === 'cancelled' ? 'cancelled' : 'dead', e.last_error);
    const d = ctx.conn.stmt(FAIL_WAITING).get({ job: e.job_id, now: ctx.now, error }) as { queue: string } | undefined;
    if (d === undefined) continue;
    died.push(Number(e.job_id));
    ctx.wake(resultWakeChannel(d.queue));
  }
  return died;
}

/** The pending dependency count of a job that waits, else 0. */
export function pendingDependencies(conn: SqliteConn, id: number): number {
  return (conn.stmt(PENDING_OF).get(id) as { pending: number } | undefined)?.pending ?? 0;
}

/** What a job's handler reads of its dependencies. */
export function readChildResults(conn: SqliteConn, id: number): ChildResult[] {
  return childResults(conn.stmt(CHILD_RESULTS).all(id) as ChildRow[]);
}

/** Every live descendant of `id`, with its queue. */
export function liveDescendants(conn: SqliteConn, id: number): { id: number; queue: string }[] {
  return conn.stmt(LIVE_DESCENDANTS).all(id) as { id: number; queue: string }[];
}

/** The flow part of `sweepExpired` (inside its write): settles what ended unsettled, then forgets the rows of jobs that no longer wait or run. */
export function sweepFlows(ctx: WriteCtx, queue: string): void {
  settleFinished(ctx, queue);
  for (const w of ctx.conn.stmt(PURGE_WAITS).all({ queue }) as { job_id: number }[]) ctx.conn.stmt(PURGE_EDGES).run(w.job_id);
}
