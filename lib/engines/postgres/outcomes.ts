import { decodePayload } from '../../contract/codec.js';
import { queueWakeChannel } from '../../contract/names.js';
import { cancelWakeChannel, encodeResult, progressWakeChannel, resultWakeChannel, settleProgress } from '../../contract/results.js';
import type { Job, JobInfo } from '../../contract/types.js';
import { requireArray, requireJobId, validateKey } from '../../contract/validate.js';
import { validateUniqueKey } from '../../contract/job-extras.js';
import { promoted, runWaking, type PgContext } from './context.js';
import { num, numOrNull } from './executor.js';
import type { JobRow } from './queue.sql.js';
import { wakePayload } from './schema-sql.js';

// Results, progress and cancellation on PostgreSQL (SPEC §11): the statements of queue.sql.ts
// (`outcomeSql`) behind the Queue and Job handles.

/** What the outcome statements need of a claimed job handle. */
interface Claimed {
  readonly id: number;
  readonly queue: string;
  readonly claimToken: string;
  readonly headers: Job['headers'];
}

/** The retention of outcome records written for `queue` (its registered options). */
function retentionOf(ctx: PgContext, queue: string): number | null {
  return ctx.queueOpts(queue).resultRetentionMs;
}

/** `job.ack(result)` writing an outcome record (the result checked before any I/O). Resolves how many rows it ended (0 or 1). */
export async function ackWithOutcome(ctx: PgContext, job: Claimed & Job, result: unknown): Promise<number> {
  const text = encodeResult(result, job.id, ctx.maxPayloadBytes);
  const progress = await settleProgress(job);
  const r = await runWaking<{ n: string }>(
    ctx,
    ctx.sql.queue.ackOutcome,
    [job.id, job.claimToken, text, progress, retentionOf(ctx, job.queue), wakePayload(resultWakeChannel(job.queue))],
    wakePayload(queueWakeChannel(job.queue)),
    promoted,
  );
  return num(r.rows[0]?.n ?? 0);
}

/** One fenced progress write; true when the claim still held. */
export async function writeProgress(ctx: PgContext, job: Claimed, text: string): Promise<boolean> {
  ctx.guard();
  const r = await ctx.exec.run(ctx.sql.queue.progress, [job.id, job.claimToken, text, wakePayload(progressWakeChannel(job.queue))]);
  return r.rows.length > 0;
}

/**
 * Before a retry or fail: the progress value still waiting for its window is written first (the
 * last value is always stored with the outcome).
 */
export async function flushProgress(ctx: PgContext, job: Claimed & Job): Promise<void> {
  const text = await settleProgress(job);
  if (text !== null) await writeProgress(ctx, job, text);
}

/** After a fenced retry/fail that made the job dead: its waiters are woken (they read `lastError`). Dying is not the plain path. */
export async function wakeWaitersOfDead(ctx: PgContext, job: Claimed, dead: boolean): Promise<void> {
  if (!dead) return;
  await ctx.exec.run(ctx.sql.notify.notify, [wakePayload(resultWakeChannel(job.queue))]);
}

/** Which cancel: by id, by unique key, or every live job of an ordering key. */
export type CancelTarget = { id: number } | { uniqueKey: string } | { orderingKey: string };

/** Validates a cancel target before any I/O. */
export function cancelTarget(t: CancelTarget): CancelTarget {
  if ('id' in t) return { id: requireJobId('id', t.id) };
  if ('uniqueKey' in t) return { uniqueKey: validateUniqueKey(t.uniqueKey) };
  return { orderingKey: validateKey('orderingKey', t.orderingKey) };
}

/** Cancels (see `Queue.cancel`): resolves how many jobs it ended. */
export async function cancelJobs(ctx: PgContext, queue: string, target: CancelTarget): Promise<number> {
  const t = cancelTarget(target);
  ctx.guard();
  const sql = 'id' in t ? ctx.sql.queue.cancelOutcome : 'uniqueKey' in t ? ctx.sql.queue.cancelByKeyOutcome : ctx.sql.queue.cancelByOrderingKey;
  const value = 'id' in t ? t.id : 'uniqueKey' in t ? t.uniqueKey : t.orderingKey;
  const r = await runWaking<{ n: string }>(
    ctx,
    sql,
    [queue, value, retentionOf(ctx, queue), wakePayload(cancelWakeChannel(queue)), wakePayload(resultWakeChannel(queue))],
    wakePayload(queueWakeChannel(queue)),
    promoted,
  );
  return num(r.rows[0]?.n ?? 0);
}

/** A row of `getJobFull`. */
interface FullRow extends JobRow {
  progress: string | null;
  result: string | null;
  finished_at: string | null;
}

/** `queue.getJob(id)`: live, dead, or an outcome record. */
export async function getJobWithOutcome(ctx: PgContext, queue: string, id: number, toJobInfo: (row: JobRow) => JobInfo): Promise<JobInfo | null> {
  const jobId = requireJobId('id', id);
  ctx.guard();
  const r = await ctx.exec.run<FullRow>(ctx.sql.queue.getJobFull, [queue, jobId]);
  const row = r.rows[0];
  if (!row) return null;
  const info = toJobInfo(row);
  const extra: { result?: unknown; progress?: unknown; finishedAt?: number } = {};
  if (row.result !== null) extra.result = decodePayload(row.result, `result of job ${row.id}`);
  if (row.progress !== null) extra.progress = decodePayload(row.progress, `progress of job ${row.id}`);
  const finished = numOrNull(row.finished_at);
  if (finished !== null) extra.finishedAt = finished;
  return { ...info, ...extra };
}

/** `queue.cancelledAmong(ids)`. */
export async function cancelledAmong(ctx: PgContext, queue: string, ids: readonly number[]): Promise<number[]> {
  const list = requireArray('ids', ids).map((id, i) => requireJobId(`ids[${i}]`, id));
  ctx.guard();
  if (list.length === 0) return [];
  const r = await ctx.exec.run<{ id: string }>(ctx.sql.queue.cancelledAmong, [queue, list]);
  return r.rows.map((x) => num(x.id));
}

/** Deletes the queue's outcome records past their retention (part of `sweepExpired`). */
export async function purgeOutcomes(ctx: PgContext, queue: string): Promise<number> {
  const r = await ctx.exec.run<{ n: string }>(ctx.sql.queue.purgeOutcomes, [queue]);
  return num(r.rows[0]?.n ?? 0);
}
