import { queueWakeChannel } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS } from '../../contract/options.js';
import { cancelWakeChannel, progressWakeChannel, resultWakeChannel } from '../../contract/results.js';
import type { JobInfo } from '../../contract/types.js';
import type { SqliteCore } from './context.js';
import * as ops from './queue-ops.js';
import * as Q from './queue.sql.js';
import type { WriteCtx } from './writer.js';
import { settle } from './flows.js';
import { jobWithOutcome, type CancelBy, type Claim, type FullColumns, type OutcomeAck } from '../shared/outcomes.js';

// Results, progress and cancellation on SQLite (SPEC §11): each outcome is one write transaction
// that inserts the record from the job row and then ends the row the way queue-ops.ts does.
// Arguments are checked by the shared handles.

/** When an outcome record written now for `queue` may be pruned (its registered options), null for never. */
function keepUntil(core: SqliteCore, queue: string, now: number): number | null {
  const ms = core.registeredQueueOpts(queue, DEFAULT_QUEUE_OPTS).resultRetentionMs;
  return ms === null ? null : now + ms;
}

/**
 * Deletes the claimed job and writes its `completed` record in one write transaction; with `settles` (a job
 * of a flow) its dependents are settled in it too (flows.ts).
 */
export function ackWithOutcome(core: SqliteCore, queue: string, ack: OutcomeAck): Promise<boolean> {
  const { job, resultText, progressText, settles } = ack;
  return core.write('ack', (ctx) => {
    const now = ctx.now;
    const params = {
      id: job.id,
      token: job.claimToken,
      now,
      state: 'completed',
      result: resultText,
      progress: progressText,
      keepUntil: keepUntil(core, queue, now),
    };
    if (ctx.conn.stmt(Q.RECORD_COMPLETED).run(params).changes === 0) return false;
    ops.ackJob(ctx, queue, job.id, job.claimToken, false);
    ctx.wake(resultWakeChannel(queue));
    if (settles) settle(ctx, [job.id]);
    return true;
  });
}

/** One fenced progress write; true when the claim still held. */
export function writeProgress(core: SqliteCore, queue: string, job: Claim, text: string): Promise<boolean> {
  return core.write('progress', (ctx) => {
    if (
      ctx.conn.stmt(Q.WRITE_PROGRESS).run({ id: job.id, token: job.claimToken, now: ctx.now, progress: text })
        .changes === 0
    )
      return false;
    ctx.wake(progressWakeChannel(queue));
    return true;
  });
}

/** Wakes the queue's result waiters (a job went dead; they read `lastError`). */
export async function wakeWaiters(core: SqliteCore, queue: string): Promise<void> {
  await core.write('notify', (ctx) => ctx.wake(resultWakeChannel(queue)));
}

/** Cancels (see `Queue.cancel`): resolves how many jobs it ended. */
export function cancelJobs(core: SqliteCore, queue: string, t: CancelBy): Promise<number> {
  return core.write('cancel', (ctx) => {
    const rows: { id: number; state: string }[] =
      t.by === 'id'
        ? ((r) => (r ? [{ id: t.id, state: r.state }] : []))(
            ctx.conn.stmt(Q.JOB_STATE).get(t.id, queue) as { state: string } | undefined,
          )
        : (ctx.conn.stmt(t.by === 'uniqueKey' ? Q.LIVE_OF_UNIQUE_KEY : Q.LIVE_OF_ORDERING_KEY).all(queue, t.key) as {
            id: number;
            state: string;
          }[]);
    return cancelRows(ctx, core, queue, rows);
  });
}

function cancelRows(
  ctx: WriteCtx,
  core: SqliteCore,
  queue: string,
  rows: readonly { id: number; state: string }[],
): number {
  const now = ctx.now;
  const until = keepUntil(core, queue, now);
  let recorded = 0;
  let running = 0;
  let n = 0;
  for (const r of rows) {
    if (r.state !== 'dead')
      recorded += ctx.conn
        .stmt(Q.RECORD_CANCELLED)
        .run({ id: r.id, queue, now, state: 'cancelled', keepUntil: until }).changes;
    if (r.state === 'processing') running++;
    if (ops.cancelJob(ctx, queue, r.id)) n++;
  }
  if (running > 0) ctx.wake(cancelWakeChannel(queue));
  // A cancelled job may have held a concurrency key's slot: the queue's workers (of any store) may claim again.
  if (n > 0) ctx.wake(queueWakeChannel(queue));
  if (recorded > 0) ctx.wake(resultWakeChannel(queue));
  return n;
}

/** A row of `GET_JOB_FULL` (and of the admin search). */
export type FullRow = FullColumns<number>;

/** `queue.getJob(id)`: live, dead, or an outcome record. */
export async function getJobWithOutcome(core: SqliteCore, queue: string, id: number): Promise<JobInfo | null> {
  return jobWithOutcome(
    await core.read('getJob', (conn) => conn.stmt(Q.GET_JOB_FULL).get({ id, queue }) as FullRow | undefined),
  );
}

/** `queue.cancelledAmong(ids)` (`ids` non-empty). */
export async function cancelledAmong(core: SqliteCore, queue: string, ids: readonly number[]): Promise<number[]> {
  const rows = await core.read(
    'cancelledAmong',
    (conn) => conn.stmt(Q.CANCELLED_AMONG).all({ ids: JSON.stringify(ids), queue }) as { id: number }[],
  );
  return rows.map((r) => r.id);
}

/** Deletes the queue's outcome records past their retention (inside `sweepExpired`'s write). */
export function purgeOutcomes(ctx: WriteCtx, queue: string): number {
  return ctx.conn.stmt(Q.PURGE_OUTCOMES).run({ queue, now: ctx.now }).changes;
}
