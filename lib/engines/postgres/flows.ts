import { badDependency, type FlowNode, type FlowPlan } from '../../contract/flows.js';
import type { ChildResult } from '../../contract/flows.js';
import { queueWakeChannel } from '../../contract/names.js';
import { resultWakeChannel } from '../../contract/results.js';
import { childResults, edgeDiedError, endedEdges, FlowWiring, type ChildRow, type EdgeRow } from '../shared/flows.js';
import { always, enqueueResolved, rewinding, woke, type PgContext } from './context.js';
import { num, type Executor } from './connection.js';
import { wakePayload } from './schema-sql.js';

// Job flows on PostgreSQL (SPEC §11, docs/flows.md): the statements are flows.sql.ts. Every function
// here runs inside one transaction (`exec`), so a dependency's end and its dependents' unblock
// commit together.

/** Inserts a checked flow: refuses a missing, dead or cancelled dependency id before any write. */
export async function insertFlow(ctx: PgContext, exec: Executor, plan: FlowPlan): Promise<FlowNode> {
  const f = ctx.sql.flows;
  const flow = new FlowWiring(plan);
  if (plan.existing.length > 0)
    flow.checkExisting(
      (await exec.run<{ id: string; queue: string; state: string }>(f.whereAre, [plan.existing])).rows,
    );
  const ids: number[] = [];
  for (const j of plan.jobs) ids.push(await enqueueResolved(ctx, exec, j.queue, j.text, j.stamp));
  const depIds = flow.inserted(ids);
  if (depIds.length === 0) return flow.tree();
  // Live dependencies are locked until commit: an ack of one waits for us, then sees our edges.
  const live = new Set((await exec.run<{ id: string }>(f.markLive, [depIds])).rows.map((x) => num(x.id)));
  const done = new Map<number, string>();
  const gone = depIds.filter((id) => !live.has(id));
  if (gone.length > 0) {
    const r = await exec.run<{ id: string; state: string }>(f.whereAre, [gone]);
    const state = new Map(r.rows.map((x) => [num(x.id), x.state]));
    for (const id of gone) {
      const s = state.get(id) ?? 'completed';
      if (s === 'dead' || s === 'cancelled') throw badDependency(id, s);
      done.set(id, 'completed');
    }
  }
  for (const { id, job, deps } of flow.dependents()) {
    await exec.run(f.insertEdges, [
      id,
      deps.map((d) => d.id),
      deps.map((d) => d.queue),
      deps.map((d) => done.has(d.id)),
      deps.map((d) => done.get(d.id) ?? null),
    ]);
    await exec.run(f.insertWait, [id, job.queue, deps.filter((d) => !done.has(d.id)).length, job.policy]);
  }
  return flow.tree();
}

/**
 * Settles the edges from dependencies `depIds` that are no longer live: counts their dependents
 * down (a dependent at zero becomes claimable, with a wake), or under `fail` ends the dependent dead
 * and settles its own dependents in turn.
 */
export async function settle(ctx: PgContext, exec: Executor, depIds: readonly number[]): Promise<void> {
  let ids = [...depIds];
  while (ids.length > 0) {
    const r = await exec.run<EdgeRow>(ctx.sql.flows.edgesOf, [ids]);
    ids = await settleEdges(ctx, exec, r.rows);
  }
}

/**
 * The sweep's repair: settles up to `limit` edges of queue dependencies that ended without settling (a plain
 * ack, a death in a claim or by expiry, a crash between).
 */
export async function settleFinished(ctx: PgContext, exec: Executor, queue: string, limit = 1000): Promise<number> {
  const r = await exec.run<EdgeRow>(ctx.sql.flows.finishedEdges, [queue, limit]);
  const died = await settleEdges(ctx, exec, r.rows);
  if (died.length > 0) await settle(ctx, exec, died);
  return r.rows.length;
}

/** Settles `rows`; resolves the dependents that went dead (theirs are next). */
async function settleEdges(ctx: PgContext, exec: Executor, rows: readonly EdgeRow[]): Promise<number[]> {
  const f = ctx.sql.flows;
  const died: number[] = [];
  for (const { e, out } of endedEdges(rows)) {
    const row = (
      await exec.run<{ marked: string; pending: number | null; queue: string | null }>(f.settleEdge, [
        e.job_id,
        e.dep_id,
        out,
      ])
    ).rows[0]!;
    if (num(row.marked) === 0) continue;
    if (row.queue !== null) {
      if (num(row.pending ?? 0) === 0)
        await exec.wakes.run(
          wakePayload(queueWakeChannel(row.queue)),
          (w) => exec.run<object>(f.unblock, [e.job_id, w]),
          rewinding(ctx, woke),
        );
      continue;
    }
    const error = edgeDiedError(e, out);
    const d = await exec.run<{ queue: string }>(f.failWaiting, [e.job_id, error]);
    const q = d.rows[0]?.queue;
    if (q === undefined) continue;
    died.push(num(e.job_id));
    await exec.wakes.run(wakePayload(resultWakeChannel(q)), (w) => exec.run(ctx.sql.notify.notify, [w]), always);
  }
  return died;
}

/** The pending dependency count of a job that waits, else 0. */
export async function pendingDependencies(ctx: PgContext, id: number): Promise<number> {
  const r = await ctx.exec.run<{ pending: number }>(ctx.sql.flows.pendingOf, [id]);
  return num(r.rows[0]?.pending ?? 0);
}

/** What a job's handler reads of its dependencies. */
export async function readChildResults(ctx: PgContext, id: number): Promise<ChildResult[]> {
  const r = await ctx.exec.run<ChildRow>(ctx.sql.flows.childResults, [id]);
  return childResults(r.rows);
}

/** Every live descendant of `id`, with its queue. */
export async function liveDescendants(ctx: PgContext, id: number): Promise<{ id: number; queue: string }[]> {
  const r = await ctx.exec.run<{ id: string; queue: string }>(ctx.sql.flows.liveDescendants, [id]);
  return r.rows.map((x) => ({ id: num(x.id), queue: x.queue }));
}

/** The flow part of `sweepExpired`: settles what ended unsettled, then forgets the rows of jobs that no longer wait or run. */
export async function sweepFlows(ctx: PgContext, queue: string): Promise<void> {
  await ctx.inTransaction((exec) => settleFinished(ctx, exec, queue));
  await ctx.exec.run(ctx.sql.flows.purge, [queue]);
}
