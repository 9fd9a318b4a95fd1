import { queueWakeChannel } from '../../contract/names.js';
import { cancelWakeChannel, progressWakeChannel, resultWakeChannel } from '../../contract/results.js';
import type { JobInfo } from '../../contract/types.js';
import { always, promoted, rewinding, runWaking, type PgContext } from './context.js';
import { num } from './connection.js';
import { wakePayload } from './schema-sql.js';
import { settle } from './flows.js';
import { jobWithOutcome, type CancelBy, type Claim, type FullColumns, type OutcomeAck } from '../shared/outcomes.js';

// Results, progress and cancellation on PostgreSQL (SPEC §11): the statements of queue.sql.ts
// (`outcomeSql`) behind the queue driver. Arguments are checked by the shared handles.

/** The retention of outcome records written for `queue` (its registered options). */
function retentionOf(ctx: PgContext, queue: string): number | null {
  return ctx.queueOpts(queue).resultRetentionMs;
}

/**
 * Deletes the claimed job and writes its `completed` record in one statement; with `settles` (a
 * job of a flow) its dependents are settled in the same transaction (flows.ts).
 */
export async function ackWithOutcome(ctx: PgContext, queue: string, ack: OutcomeAck): Promise<boolean> {
  const { job, resultText, progressText, settles } = ack;
  const values = [
    job.id,
    job.claimToken,
    resultText,
    progressText,
    retentionOf(ctx, queue),
    wakePayload(resultWakeChannel(queue)),
  ];
  const wake = wakePayload(queueWakeChannel(queue));
  if (!settles) {
    const r = await runWaking<{ n: string }>(ctx, ctx.sql.queue.ackOutcome, values, wake, rewinding(ctx, promoted));
    return num(r.rows[0]?.n ?? 0) > 0;
  }
  const ok = await ctx.inTransaction(async (exec) => {
    const r = await exec.wakes.run(
      wake,
      (w) => exec.run<{ n: string }>(ctx.sql.queue.ackOutcome, [...values, w]),
      promoted,
    );
    const ended = num(r.rows[0]?.n ?? 0) > 0;
    if (ended) await settle(ctx, exec, [job.id]);
    return ended;
  });
  // Committed: the dependents it unblocked (and a key's next job) are ready with their old run_at.
  if (ok) ctx.claims.rewind();
  return ok;
}

/** One fenced progress write; true when the claim still held. */
export async function writeProgress(ctx: PgContext, queue: string, job: Claim, text: string): Promise<boolean> {
  const r = await ctx.exec.run(ctx.sql.queue.progress, [
    job.id,
    job.claimToken,
    text,
    wakePayload(progressWakeChannel(queue)),
  ]);
  return r.rows.length > 0;
}

/** Wakes the queue's result waiters (a job went dead; they read `lastError`). */
export async function wakeWaiters(ctx: PgContext, queue: string): Promise<void> {
  await ctx.exec.run(ctx.sql.notify.notify, [wakePayload(resultWakeChannel(queue))]);
}

/** Cancels (see `Queue.cancel`): resolves how many jobs it ended. */
export async function cancelJobs(ctx: PgContext, queue: string, t: CancelBy): Promise<number> {
  const q = ctx.sql.queue;
  const sql = t.by === 'id' ? q.cancelOutcome : t.by === 'uniqueKey' ? q.cancelByKeyOutcome : q.cancelByOrderingKey;
  const value = t.by === 'id' ? t.id : t.key;
  const r = await runWaking<{ n: string }>(
    ctx,
    sql,
    [
      queue,
      value,
      retentionOf(ctx, queue),
      wakePayload(cancelWakeChannel(queue)),
      wakePayload(resultWakeChannel(queue)),
    ],
    wakePayload(queueWakeChannel(queue)),
    rewinding(ctx, promoted),
  );
  const n = num(r.rows[0]?.n ?? 0);
  // A cancelled job may have held a concurrency key's slot (or a global one): the queue's workers may claim
  // again. Sent whether or not this process knows the queue has limits (a dashboard or script cancelling has
  // never claimed there); a cancel is rare, the wake one NOTIFY.
  if (n > 0) await runWaking(ctx, ctx.sql.notify.notify, [], wakePayload(queueWakeChannel(queue)), always);
  return n;
}

/** A row of `getJobFull` (and of the admin search). */
export type FullRow = FullColumns<string>;

/** `queue.getJob(id)`: live, dead, or an outcome record. */
export async function getJobWithOutcome(ctx: PgContext, queue: string, id: number): Promise<JobInfo | null> {
  return jobWithOutcome((await ctx.exec.run<FullRow>(ctx.sql.queue.getJobFull, [queue, id])).rows[0]);
}

/** `queue.cancelledAmong(ids)` (`ids` non-empty). */
export async function cancelledAmong(ctx: PgContext, queue: string, ids: readonly number[]): Promise<number[]> {
  const r = await ctx.exec.run<{ id: string }>(ctx.sql.queue.cancelledAmong, [queue, ids]);
  return r.rows.map((x) => num(x.id));
}

/** Deletes the queue's outcome records past their retention (part of `sweepExpired`). */
export async function purgeOutcomes(ctx: PgContext, queue: string): Promise<number> {
  const r = await ctx.exec.run<{ n: string }>(ctx.sql.queue.purgeOutcomes, [queue]);
  return num(r.rows[0]?.n ?? 0);
}
