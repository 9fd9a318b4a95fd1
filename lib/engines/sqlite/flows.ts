import type { ChildResult, FlowNode, FlowPlan } from '../../contract/flows.js';
import { queueWakeChannel } from '../../contract/names.js';
import { resultWakeChannel } from '../../contract/results.js';
import { childResults, edgeDiedError, endedEdges, FlowWiring, type ChildRow, type EdgeRow } from '../shared/flows.js';
import type { SqliteConn } from './connection.js';
import { insertPlan, type Inserted, type InsertStep, type StepAnswer } from './queue-ops.js';
import { INSERT_JOB } from './queue.sql.js';
import type { WriteCtx } from './writer.js';
import {
  BLOCK,
  CHILD_RESULTS,
  COUNT_DOWN,
  EDGES_OF,
  FAIL_WAITING,
  FINISHED_EDGES,
  INSERT_EDGE,
  INSERT_WAIT,
  LIVE_DESCENDANTS,
  MARK_DONE,
  MARK_LIVE,
  PENDING_OF,
  PURGE_EDGES,
  PURGE_WAITS,
  UNBLOCK,
  WHERE_ARE,
} from './flows.sql.js';

// Job flows on SQLite (SPEC §11, docs/flows.md): each function runs inside one write transaction,
// so a dependency's end and its dependents' unblock commit together. The same rules and statements
// as PostgreSQL's flows.sql.ts / flows.ts; the statements are flows.sql.ts.

/** One statement of an {@link insertFlowPlan}: an {@link InsertStep}, or `all` (every row back). */
export type FlowStep = InsertStep | { kind: 'all'; sql: string; params: unknown[] };
/** What a {@link FlowStep} gave back: a `StepAnswer`, or the rows of an `all`. */
export type FlowAnswer = StepAnswer | readonly { readonly [column: string]: unknown }[];
/** What a flow plan inserted: the flow's tree of ids, and the queues whose workers need a wake. */
export interface FlowInserted {
  node: FlowNode;
  wakes: string[];
}

/**
 * The statements of a checked flow's insert, once for both ways SQLite writes (the store's write
 * connection, synchronously, in {@link insertFlow}; a caller's TypeORM query runner,
 * asynchronously, in external-tx.ts), as queue-ops `insertPlan`: each job goes in through its
 * `insertPlan`. Refuses a missing, dead or cancelled dependency id before any write.
 */
export function* insertFlowPlan(plan: FlowPlan, now: number): Generator<FlowStep, FlowInserted, FlowAnswer> {
  const flow = new FlowWiring(plan);
  if (plan.existing.length > 0) {
    const json = JSON.stringify(plan.existing);
    flow.checkExisting(
      (yield { kind: 'all', sql: WHERE_ARE, params: [json, json] }) as { id: number; queue: string; state: string }[],
    );
  }
  const wakes = new Set<string>();
  const ids: number[] = [];
  for (const j of plan.jobs) {
    const r = yield* jobSteps(insertPlan(j.queue, [j.text], j.stamp, now));
    ids.push(r.ids[0]!);
    if (r.wake) wakes.add(j.queue);
  }
  const depIds = flow.inserted(ids);
  if (depIds.length === 0) return { node: flow.tree(), wakes: [...wakes] };
  const marked = (yield { kind: 'all', sql: MARK_LIVE, params: [JSON.stringify(depIds)] }) as { id: number }[];
  const live = new Set(marked.map((x) => Number(x.id)));
  const done = new Set(depIds.filter((id) => !live.has(id)));
  for (const { id, job, deps } of flow.dependents()) {
    for (const d of deps)
      yield {
        kind: 'run',
        sql: INSERT_EDGE,
        params: [id, d.id, d.queue, done.has(d.id) ? 1 : 0, done.has(d.id) ? 'completed' : null],
      };
    const pending = deps.filter((d) => !done.has(d.id)).length;
    yield { kind: 'run', sql: INSERT_WAIT, params: [id, job.queue, pending, job.policy] };
    if (pending > 0) yield { kind: 'run', sql: BLOCK, params: [id] };
  }
  return { node: flow.tree(), wakes: [...wakes] };
}

/** A job's `insertPlan` as flow steps: an insert step is never answered with rows. */
function* jobSteps(g: Generator<InsertStep, Inserted, StepAnswer>): Generator<FlowStep, Inserted, FlowAnswer> {
  let step = g.next();
  while (!step.done) step = g.next((yield step.value) as StepAnswer);
  return step.value;
}

/** {@link insertFlowPlan} on the store's write connection, in the write transaction of `ctx`. */
export function insertFlow(ctx: WriteCtx, plan: FlowPlan): FlowNode {
  const conn = ctx.conn;
  const gen = insertFlowPlan(plan, ctx.now);
  let step = gen.next();
  while (!step.done) {
    const s = step.value;
    step = gen.next(
      s.kind === 'insert'
        ? Number(conn.stmt(INSERT_JOB).run(...s.params).lastInsertRowid)
        : s.kind === 'get'
          ? (conn.stmt(s.sql).get(...s.params) as StepAnswer)
          : s.kind === 'all'
            ? (conn.stmt(s.sql).all(...s.params) as FlowAnswer)
            : void conn.stmt(s.sql).run(...s.params),
    );
  }
  for (const q of step.value.wakes) ctx.wake(queueWakeChannel(q));
  return step.value.node;
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
  for (const { e, out } of endedEdges(rows)) {
    if (ctx.conn.stmt(MARK_DONE).run({ job: e.job_id, dep: e.dep_id, outcome: out }).changes === 0) continue;
    const row = ctx.conn.stmt(COUNT_DOWN).get({ job: e.job_id, outcome: out }) as
      { pending: number; queue: string } | undefined;
    if (row !== undefined) {
      if (row.pending === 0 && ctx.conn.stmt(UNBLOCK).run({ job: e.job_id }).changes > 0)
        ctx.wake(queueWakeChannel(row.queue));
      continue;
    }
    const error = edgeDiedError(e, out);
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
  for (const w of ctx.conn.stmt(PURGE_WAITS).all({ queue }) as { job_id: number }[])
    ctx.conn.stmt(PURGE_EDGES).run(w.job_id);
}
