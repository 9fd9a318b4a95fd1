import { backoffDelayMs } from '../../contract/backoff.js';
import { decodePayload } from '../../contract/codec.js';
import { queueWakeChannel } from '../../contract/names.js';
import type { JobOpts, QueueOpts } from '../../contract/options.js';
import { bulkItems, decodeHeaders, validateUniqueKey, type JobHeaders } from '../../contract/job-extras.js';
import { resolveRateLimit } from '../../contract/queue-settings.js';
import { ackBatchInput, claimInput, jobIdsInput, listDeadInput, requireBatchSize, requireDurationMs } from '../../contract/validate.js';
import type { BulkJob, ClaimOpts, Job, JobInfo, ListDeadOpts, Queue, QueueSettings, QueueStats, RateLimit, RedriveResult, WakeReceiver } from '../../contract/types.js';
import { errorText } from '../../internal/outbox-handle.js';
import { encodePayload } from '../../contract/codec.js';
import { resolveJobStamp, type JobWrite } from '../../contract/options.js';
import { HANDOFF, handoffCandidate, type HandoffPoint, type HandoffSlot } from '../../internal/handoff.js';
import { withNextDue } from '../../internal/next-due.js';
import { always, enqueueBulkJobs, enqueueJob, enqueueJobs, enqueueResolved, moved, promoted, redriveResult, runWaking, stampParams, woke, type PgContext, type RedriveRow } from './context.js';
import { num, numOrNull } from './executor.js';
import type { JobRow } from './queue.sql.js';
import { wakePayload } from './schema-sql.js';
import { cancelWakeChannel, enqueueAndWaitInput, needsOutcome, progressWakeChannel, reportProgress, resultWakeChannel, waitForOutcome, waitInput, type WaitOpts } from '../../contract/results.js';
import { ackWithOutcome, cancelJobs, cancelledAmong, flushProgress, getJobWithOutcome, purgeOutcomes, wakeWaitersOfDead, writeProgress } from './outcomes.js';

/** A queue handle; the name is validated (or engine-derived) by the store. */
export class PostgresQueue implements Queue {
  readonly opts: Readonly<Required<QueueOpts>>;
  /** Where this store's idle workers of the queue register for local hand-off (internal; null when `localHandoff` is off). */
  readonly [HANDOFF]: HandoffPoint | null;
  private readonly wake: string;

  constructor(
    private readonly ctx: PgContext,
    readonly name: string,
    opts: Required<QueueOpts>,
  ) {
    this.opts = Object.freeze({ ...opts });
    this.wake = wakePayload(queueWakeChannel(name));
    this[HANDOFF] = ctx.handoff ? ctx.handoff.point(name) : null;
  }

  async enqueue(payload: unknown, opts?: JobOpts): Promise<number> {
    this.ctx.guard();
    const handoff = this.ctx.handoff;
    if (handoff === null || !handoff.has(this.name)) return enqueueJob(this.ctx, this.ctx.exec, this.name, this.opts, payload, opts);
    const stamp = resolveJobStamp(this.opts, opts);
    const text = encodePayload(payload, 'payload', this.ctx.maxPayloadBytes);
    // Reserved synchronously, before anything is sent: two enqueues never over-fill a worker.
    const slot = handoffCandidate(stamp) ? handoff.reserve(this.name) : null;
    if (slot === null) return enqueueResolved(this.ctx, this.ctx.exec, this.name, text, stamp);
    return enqueueHandingOff(this.ctx, this.name, this.wake, text, stamp, slot);
  }

  async enqueueMany(payloads: readonly unknown[], opts?: JobOpts): Promise<number[]> {
    this.ctx.guard();
    return enqueueJobs(this.ctx, this.ctx.exec, this.name, this.opts, payloads, opts);
  }

  async enqueueBulk(jobs: readonly BulkJob[]): Promise<number[]> {
    this.ctx.guard();
    return enqueueBulkJobs(this.ctx, this.name, this.opts, bulkItems<BulkJob>(jobs));
  }

  async claimOne(workerId?: string, opts?: ClaimOpts): Promise<Job | null> {
    const [job] = await this.claimBatch(1, workerId, opts);
    return job ?? null;
  }

  async claimBatch(max: number, workerId?: string, opts?: ClaimOpts): Promise<Job[]> {
    this.ctx.guard();
    requireBatchSize('max', max);
    const { workerId: worker, leaseMs } = claimInput(workerId, opts);
    const gate = this.ctx.claims;
    const exec = this.ctx.exec;
    const jobs: Job[] = [];
    if (gate.usePlain(this.name)) {
      const r = await exec.run<JobRow & { exhausted: boolean }>(this.ctx.sql.queue.claimPlain, [this.name, max, leaseMs, worker, this.ctx.claimDeferred]);
      for (const row of r.rows) jobs.push(new PostgresJob(this.ctx, row, this.wake, leaseMs));
      // A full batch with nothing to bury is the whole claim; otherwise the full claim takes the
      // rest (often nothing) and buries, so this call does all a full claim would have done.
      if (jobs.length >= max && !r.rows.some((row) => row.exhausted)) return jobs;
    }
    const started = gate.begin();
    const r = await exec.wakes.run(
      this.wake,
      (w) =>
        exec.run<(JobRow | { id: null }) & { limited: boolean; next_due_in: string | null }>(this.ctx.sql.queue.claim, [this.name, max - jobs.length, leaseMs, worker, w, this.ctx.claimDeferred]),
      promoted,
    );
    // The statement always returns a row (see q_claim); an empty claim is one row of nulls.
    for (const row of r.rows) if (row.id !== null) jobs.push(new PostgresJob(this.ctx, row, this.wake, leaseMs));
    gate.fullDone(this.name, started, r.rows[0]?.limited !== false, jobs.length >= max);
    if (jobs.length < max) withNextDue(jobs, numOrNull(r.rows[0]?.next_due_in ?? null));
    return jobs;
  }


  async ackBatch(jobs: readonly Pick<Job, 'id' | 'claimToken'>[]): Promise<number> {
    this.ctx.guard();
    const { ids, tokens } = ackBatchInput(jobs);
    if (ids.length === 0) return 0;
    // Only our own handles are trusted to say "no ordering key"; otherwise the statement that promotes.
    const n = jobs.every((j) => j instanceof PostgresJob && j.orderingKey === null)
      ? counted(await this.ctx.exec.run<Counted>(this.ctx.sql.queue.ackBatchPlain, [this.name, ids, tokens]))
      : counted(await runWaking<Counted>(this.ctx, this.ctx.sql.queue.ackBatch, [this.name, ids, tokens], this.wake, promoted));
    this.ctx.outcomes.record(this.name, 'completed', n);
    return n;
  }

  async cancel(id: number): Promise<boolean> {
    return (await cancelJobs(this.ctx, this.name, { id })) > 0;
  }

  async cancelByKey(uniqueKey: string): Promise<boolean> {
    return (await cancelJobs(this.ctx, this.name, { uniqueKey })) > 0;
  }

  cancelByOrderingKey(orderingKey: string): Promise<number> {
    return cancelJobs(this.ctx, this.name, { orderingKey });
  }

  cancelledAmong(ids: readonly number[]): Promise<number[]> {
    return cancelledAmong(this.ctx, this.name, ids);
  }

  listenCancels(): WakeReceiver {
    this.ctx.guard();
    return this.ctx.hub.listen(cancelWakeChannel(this.name));
  }

  listenProgress(): WakeReceiver {
    this.ctx.guard();
    return this.ctx.hub.listen(progressWakeChannel(this.name));
  }

  async waitForResult(id: number, opts?: WaitOpts): Promise<unknown> {
    const w = waitInput(id, opts);
    this.ctx.guard();
    return waitForOutcome(() => this.ctx.hub.listen(resultWakeChannel(this.name)), (i) => this.getJob(i), w.id, w.timeoutMs);
  }

  async enqueueAndWait(payload: unknown, opts?: JobOpts & WaitOpts): Promise<unknown> {
    const { jobOpts, timeoutMs } = enqueueAndWaitInput(opts);
    return this.waitForResult(await this.enqueue(payload, jobOpts), { timeoutMs });
  }

  async getJob(id: number): Promise<JobInfo | null> {
    return getJobWithOutcome(this.ctx, this.name, id, toJobInfo);
  }

  async getJobByKey(uniqueKey: string): Promise<JobInfo | null> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<JobRow>(this.ctx.sql.queue.getJobByKey, [this.name, validateUniqueKey(uniqueKey)]);
    return r.rows[0] ? toJobInfo(r.rows[0]) : null;
  }

  async pause(): Promise<void> {
    this.ctx.guard();
    await changeSettings(this.ctx, this.name, () => runWaking(this.ctx, this.ctx.sql.queue.setPaused, [this.name, true], this.wake, woke));
  }

  async resume(): Promise<void> {
    this.ctx.guard();
    await changeSettings(this.ctx, this.name, () => runWaking(this.ctx, this.ctx.sql.queue.setPaused, [this.name, false], this.wake, woke));
  }

  async setRateLimit(limit: RateLimit | null): Promise<void> {
    this.ctx.guard();
    const l = resolveRateLimit(limit);
    await changeSettings(this.ctx, this.name, () => runWaking(this.ctx, this.ctx.sql.queue.setRateLimit, [this.name, l?.max ?? null, l?.perMs ?? null], this.wake, always));
  }

  async settings(): Promise<QueueSettings> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{ paused: boolean; rate_max: number | null; rate_per_ms: string | null }>(this.ctx.sql.queue.getSettings, [this.name]);
    const row = r.rows[0];
    if (!row) return { paused: false, rateLimit: null };
    return { paused: row.paused, rateLimit: row.rate_max === null ? null : { max: row.rate_max, perMs: num(row.rate_per_ms) } };
  }

  async sweepExpired(): Promise<{ expired: number; purged: number }> {
    this.ctx.guard();
    // Two statements on purpose: rows expired now are purged in the same call when their retention is 0.
    const expired = await runWaking<Counted>(this.ctx, this.ctx.sql.queue.expire, [this.name], this.wake, promoted);
    const purged = await this.ctx.exec.run<Counted>(this.ctx.sql.queue.purgeRetained, [this.name]);
    return { expired: counted(expired), purged: counted(purged) + (await purgeOutcomes(this.ctx, this.name)) };
  }

  async listDead(opts?: ListDeadOpts): Promise<JobInfo[]> {
    this.ctx.guard();
    const { before, after, limit } = listDeadInput(opts);
    const r = await this.ctx.exec.run<JobRow>(this.ctx.sql.queue.listDead, [this.name, before, after, limit]);
    return r.rows.map(toJobInfo);
  }

  async retryDead(ids: readonly number[]): Promise<RedriveResult> {
    this.ctx.guard();
    const list = jobIdsInput(ids);
    if (list.length === 0) return { moved: 0, conflicts: 0, conflictIds: [] };
    return redriveResult(await runWaking<RedriveRow>(this.ctx, this.ctx.sql.queue.retryDead, [this.name, list], this.wake, moved));
  }

  async purgeDead(ids: readonly number[]): Promise<number> {
    this.ctx.guard();
    const list = jobIdsInput(ids);
    if (list.length === 0) return 0;
    return counted(await this.ctx.exec.run<Counted>(this.ctx.sql.queue.purgeDead, [this.name, list]));
  }

  async stats(): Promise<QueueStats> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{ pending: string; processing: string; dead: string; scheduled: string; oldest: string }>(this.ctx.sql.queue.stats, [this.name]);
    const row = r.rows[0]!;
    return {
      pending: num(row.pending),
      processing: num(row.processing),
      dead: num(row.dead),
      scheduled: num(row.scheduled),
      oldestPendingAgeMs: Math.max(0, num(row.oldest)),
    };
  }

  listen(): WakeReceiver {
    this.ctx.guard();
    return this.ctx.hub.listen(queueWakeChannel(this.name));
  }
}

/** A claimed job; every op is fenced by token and deadline in SQL. */
export class PostgresJob implements Job {
  readonly id: number;
  readonly queue: string;
  readonly payload: unknown;
  readonly priority: number;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly claimToken: string;
  deadline: number;
  readonly leaseMs: number;
  readonly enqueuedAt: number;
  readonly headers: JobHeaders;
  readonly uniqueKey: string | null;
  readonly orderingKey: string | null;
  private readonly backoffBaseMs: number;

  constructor(
    private readonly ctx: PgContext,
    row: JobRow,
    private readonly wake: string,
    /** The claim's lease override (ms); null = the row's stamped visibility timeout. */
    leaseOverrideMs: number | null,
  ) {
    this.id = num(row.id);
    this.queue = row.queue;
    this.payload = decodePayload(row.payload, `payload of job ${row.id}`);
    this.priority = row.priority;
    this.attempts = row.attempts;
    this.maxAttempts = row.max_attempts;
    this.claimToken = row.claim_token!;
    this.deadline = num(row.claimed_until);
    this.leaseMs = leaseOverrideMs ?? num(row.visibility_timeout_ms);
    this.enqueuedAt = num(row.enqueued_at);
    this.backoffBaseMs = num(row.backoff_base_ms);
    this.headers = decodeHeaders(row.headers);
    this.uniqueKey = row.unique_key;
    this.orderingKey = row.ordering_key;
  }

  payloadAs<U>(): U {
    return this.payload as U;
  }

  async ack(result?: unknown): Promise<boolean> {
    this.ctx.guard();
    const n = needsOutcome(this, result)
      ? await ackWithOutcome(this.ctx, this, result)
      : this.orderingKey === null
        ? counted(await this.ctx.exec.run<Counted>(this.ctx.sql.queue.ackPlain, [this.id, this.claimToken]))
        : counted(await runWaking<Counted>(this.ctx, this.ctx.sql.queue.ack, [this.id, this.claimToken], this.wake, promoted));
    this.ctx.outcomes.record(this.queue, 'completed', n);
    return n > 0;
  }

  async retry(error: unknown, delayMs?: number): Promise<boolean> {
    this.ctx.guard();
    const delay = delayMs === undefined ? backoffDelayMs(this.attempts, this.backoffBaseMs, this.ctx.random) : requireDurationMs('delayMs', delayMs, { allowZero: true });
    await flushProgress(this.ctx, this);
    const r = await runWaking<{ state: string; woke: string | null; promoted: string }>(
      this.ctx,
      this.ctx.sql.queue.retry,
      [this.id, this.claimToken, delay, errorText(error)],
      this.wake,
      (x) => woke(x) || promoted(x),
    );
    if (r.rows[0]) this.ctx.outcomes.record(this.queue, r.rows[0].state === 'dead' ? 'dead' : 'retried');
    await wakeWaitersOfDead(this.ctx, this, r.rows[0]?.state === 'dead');
    return r.rows.length > 0;
  }

  async fail(error: unknown): Promise<boolean> {
    this.ctx.guard();
    await flushProgress(this.ctx, this);
    const r = await runWaking<Counted>(this.ctx, this.ctx.sql.queue.fail, [this.id, this.claimToken, errorText(error)], this.wake, promoted);
    const n = counted(r);
    this.ctx.outcomes.record(this.queue, 'dead', n);
    await wakeWaitersOfDead(this.ctx, this, n > 0);
    return n > 0;
  }

  progress(value: unknown): Promise<boolean> {
    return reportProgress(this, value, (text) => writeProgress(this.ctx, this, text));
  }

  async heartbeat(extendMs: number): Promise<boolean> {
    this.ctx.guard();
    const extend = requireDurationMs('extendMs', extendMs);
    const r = await this.ctx.exec.run<{ claimed_until: string }>(this.ctx.sql.queue.heartbeat, [this.id, this.claimToken, extend]);
    if (!r.rows[0]) return false;
    this.deadline = num(r.rows[0].claimed_until);
    return true;
  }

  async release(): Promise<boolean> {
    this.ctx.guard();
    const r = await runWaking(this.ctx, this.ctx.sql.queue.release, [this.id, this.claimToken], this.wake, (x) => x.rows.length > 0);
    return r.rows.length > 0;
  }
}

/** One statement inserts the job claimed by `slot`'s worker, or pending (and waking) when the queue's settings or the clock say no. */
async function enqueueHandingOff(ctx: PgContext, queue: string, wake: string, text: string, stamp: JobWrite, slot: HandoffSlot): Promise<number> {
  let row: JobRow & { woke: string | null };
  try {
    const exec = ctx.exec;
    const r = await exec.wakes.run(
      wake,
      (w) => exec.run<JobRow & { woke: string | null }>(ctx.sql.queue.enqueueHandoff, [queue, text, ...stampParams(stamp), w, stamp.headersText, slot.workerId, slot.leaseMs]),
      woke,
    );
    row = r.rows[0]!;
  } catch (err) {
    slot.cancel();
    throw err;
  }
  if (row.state === 'processing') slot.deliver(new PostgresJob(ctx, row, wake, slot.leaseMs));
  else slot.cancel();
  return num(row.id);
}

/** A job row as `JobInfo`. */
export function toJobInfo(row: JobRow): JobInfo {
  return {
    id: num(row.id),
    queue: row.queue,
    state: row.state,
    payload: decodePayload(row.payload, `payload of job ${row.id}`),
    priority: row.priority,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    visibilityTimeoutMs: num(row.visibility_timeout_ms),
    backoffBaseMs: num(row.backoff_base_ms),
    deadLetterRetentionMs: numOrNull(row.dead_letter_retention_ms),
    runAt: num(row.run_at),
    enqueuedAt: num(row.enqueued_at),
    expiresAt: numOrNull(row.expires_at),
    claimedUntil: numOrNull(row.claimed_until),
    lastError: row.last_error,
    diedAt: numOrNull(row.died_at),
    headers: decodeHeaders(row.headers),
    uniqueKey: row.unique_key,
    orderingKey: row.ordering_key,
  };
}

/** Runs a settings statement; whatever happens, this store's next claim of the queue reads the settings again. */
async function changeSettings(ctx: PgContext, queue: string, statement: () => Promise<unknown>): Promise<void> {
  try {
    await statement();
  } finally {
    ctx.claims.invalidate(queue);
  }
}

/** Statements that end jobs return one row `{ n }`. */
interface Counted {
  n: string;
}

function counted(r: { rows: Counted[] }): number {
  return num(r.rows[0]?.n ?? 0);
}
