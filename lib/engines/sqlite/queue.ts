import { randomUUID } from 'node:crypto';
import { encodePayload, decodePayload } from '../../contract/codec.js';
import { queueWakeChannel } from '../../contract/names.js';
import { resolveJobStamp, type JobOpts, type JobWrite, type QueueOpts } from '../../contract/options.js';
import {
  ackBatchInput,
  claimInput,
  jobIdsInput,
  listDeadInput,
  requireArray,
  requireBatchSize,
  requireDurationMs,
  requireRandomDraw,
} from '../../contract/validate.js';
import { bulkItems, decodeHeaders, validateUniqueKey, type JobHeaders } from '../../contract/job-extras.js';
import { resolveRateLimit } from '../../contract/queue-settings.js';
import type { BulkJob, ClaimOpts, Job, JobInfo, ListDeadOpts, Queue, QueueSettings, QueueStats, RateLimit, RedriveResult, WakeReceiver } from '../../contract/types.js';
import { HANDOFF, handoffCandidate, type HandoffPoint, type HandoffSlot } from '../../internal/handoff.js';
import { withNextDue } from '../../internal/next-due.js';
import { errorText } from '../../internal/outbox-handle.js';
import type { SqliteCore } from './context.js';
import * as ops from './queue-ops.js';
import { COUNTS, PRIORITY_HEADS } from './counts.sql.js';
import * as Q from './queue.sql.js';
import { toJobInfo, type JobRow } from './rows.js';
import { cancelWakeChannel, enqueueAndWaitInput, needsOutcome, progressWakeChannel, reportProgress, resultWakeChannel, waitForOutcome, waitInput, type WaitOpts } from '../../contract/results.js';
import * as outcomes from './outcomes.js';

/** A queue handle on the SQLite engine (docs/semantics.md, Queues). */
export class SqliteQueue implements Queue {
  /** Where this store's idle workers of the queue register for local hand-off (internal; null when `localHandoff` is off). */
  readonly [HANDOFF]: HandoffPoint | null;

  constructor(
    private readonly core: SqliteCore,
    readonly name: string,
    readonly opts: Readonly<Required<QueueOpts>>,
  ) {
    this[HANDOFF] = core.handoff ? core.handoff.point(name) : null;
  }

  enqueue(payload: unknown, opts?: JobOpts): Promise<number> {
    try {
      const text = encodePayload(payload, 'payload', this.core.maxPayloadBytes);
      const stamp = resolveJobStamp(this.opts, opts);
      // Reserved synchronously, before the write: two enqueues never over-fill a worker.
      const slot = this.core.handoff?.has(this.name) && handoffCandidate(stamp) ? this.core.handoff.reserve(this.name) : null;
      if (slot) return enqueueHandingOff(this.core, this.name, text, stamp, slot);
      return this.core.write('enqueue', (ctx) => ops.insertJobs(ctx, this.name, [text], stamp)[0]);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async enqueueMany(payloads: readonly unknown[], opts?: JobOpts): Promise<number[]> {
    const texts = requireArray('payloads', payloads).map((p, i) => encodePayload(p, `payloads[${i}]`, this.core.maxPayloadBytes));
    const stamp = resolveJobStamp(this.opts, opts);
    if (texts.length === 0) return [];
    return this.core.write('enqueueMany', (ctx) => ops.insertJobs(ctx, this.name, texts, stamp));
  }

  async enqueueBulk(jobs: readonly BulkJob[]): Promise<number[]> {
    const items = bulkItems<BulkJob>(jobs).map((j, i) => ({ text: encodePayload(j.payload, `jobs[${i}].payload`, this.core.maxPayloadBytes), stamp: resolveJobStamp(this.opts, j.opts) }));
    if (items.length === 0) return [];
    return this.core.write('enqueueBulk', (ctx) => items.map((it) => ops.insertJobs(ctx, this.name, [it.text], it.stamp)[0]!));
  }

  async claimOne(workerId?: string, opts?: ClaimOpts): Promise<Job | null> {
    const jobs = await this.claim(1, workerId, opts);
    return jobs[0] ?? null;
  }

  claimBatch(max: number, workerId?: string, opts?: ClaimOpts): Promise<Job[]> {
    try {
      return this.claim(requireBatchSize('max', max), workerId, opts);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  async ackBatch(jobs: readonly Pick<Job, 'id' | 'claimToken'>[]): Promise<number> {
    const { ids, tokens } = ackBatchInput(jobs);
    if (ids.length === 0) return 0;
    // Only our own handles are trusted to say "no ordering key"; anything else takes the checking path.
    const plain = jobs.map((j) => j instanceof SqliteJob && j.orderingKey === null);
    const n = await this.core.write('ackBatch', (ctx) => ops.ackJobs(ctx, this.name, ids.map((id, i) => ({ id, claimToken: tokens[i]!, plain: plain[i] }))));
    this.core.outcomes.record(this.name, 'completed', n);
    return n;
  }

  async cancel(id: number): Promise<boolean> {
    return (await outcomes.cancelJobs(this.core, this.name, { id })) > 0;
  }

  async cancelByKey(uniqueKey: string): Promise<boolean> {
    return (await outcomes.cancelJobs(this.core, this.name, { uniqueKey })) > 0;
  }

  cancelByOrderingKey(orderingKey: string): Promise<number> {
    return outcomes.cancelJobs(this.core, this.name, { orderingKey });
  }

  cancelledAmong(ids: readonly number[]): Promise<number[]> {
    return outcomes.cancelledAmong(this.core, this.name, ids);
  }

  listenCancels(): WakeReceiver {
    return this.core.wakes(cancelWakeChannel(this.name));
  }

  listenProgress(): WakeReceiver {
    return this.core.wakes(progressWakeChannel(this.name));
  }

  async waitForResult(id: number, opts?: WaitOpts): Promise<unknown> {
    const w = waitInput(id, opts);
    return waitForOutcome(() => this.core.wakes(resultWakeChannel(this.name)), (i) => this.getJob(i), w.id, w.timeoutMs);
  }

  async enqueueAndWait(payload: unknown, opts?: JobOpts & WaitOpts): Promise<unknown> {
    const { jobOpts, timeoutMs } = enqueueAndWaitInput(opts);
    return this.waitForResult(await this.enqueue(payload, jobOpts), { timeoutMs });
  }

  getJob(id: number): Promise<JobInfo | null> {
    return outcomes.getJobWithOutcome(this.core, this.name, id);
  }

  async getJobByKey(uniqueKey: string): Promise<JobInfo | null> {
    const key = validateUniqueKey(uniqueKey);
    const row = await this.core.read('getJobByKey', (conn) => conn.stmt(Q.GET_JOB_BY_KEY).get(this.name, key) as JobRow | undefined);
    return row ? toJobInfo(row) : null;
  }

  pause(): Promise<void> {
    return this.core.write('pause', (ctx) => ops.setPaused(ctx, this.name, true));
  }

  resume(): Promise<void> {
    return this.core.write('resume', (ctx) => ops.setPaused(ctx, this.name, false));
  }

  async setRateLimit(limit: RateLimit | null): Promise<void> {
    const l = resolveRateLimit(limit);
    return this.core.write('setRateLimit', (ctx) => ops.setRateLimit(ctx, this.name, l?.max ?? null, l?.perMs ?? null));
  }

  async settings(): Promise<QueueSettings> {
    const row = await this.core.read('settings', (conn) => conn.stmt(Q.GET_SETTINGS).get(this.name) as { paused: number; rate_max: number | null; rate_per_ms: number | null } | undefined);
    if (!row) return { paused: false, rateLimit: null };
    return { paused: row.paused !== 0, rateLimit: row.rate_max === null || row.rate_per_ms === null ? null : { max: row.rate_max, perMs: row.rate_per_ms } };
  }

  sweepExpired(): Promise<{ expired: number; purged: number }> {
    return this.core.write('sweepExpired', (ctx) => {
      const r = ops.sweepQueue(ctx, this.name);
      return { expired: r.expired, purged: r.purged + outcomes.purgeOutcomes(ctx, this.name) };
    });
  }

  async listDead(opts?: ListDeadOpts): Promise<JobInfo[]> {
    const { before, after, limit } = listDeadInput(opts);
    const rows = await this.core.read('listDead', (conn) => conn.stmt(Q.LIST_DEAD).all({ queue: this.name, before, after: after ?? 0, limit }) as JobRow[]);
    return rows.map(toJobInfo);
  }

  async retryDead(ids: readonly number[]): Promise<RedriveResult> {
    const list = jobIdsInput(ids);
    if (list.length === 0) return { moved: 0, conflicts: 0, conflictIds: [] };
    return this.core.write('retryDead', (ctx) => ops.retryDeadJobs(ctx, this.name, list));
  }

  async purgeDead(ids: readonly number[]): Promise<number> {
    const list = jobIdsInput(ids);
    if (list.length === 0) return 0;
    return this.core.write('purgeDead', (ctx) => ops.purgeDeadJobs(ctx, this.name, list));
  }

  stats(): Promise<QueueStats> {
    return this.core.read('stats', (conn) => {
      // One read transaction, so the counters and the index probes see the same snapshot.
      return conn.db.transaction(() => {
        const now = conn.now();
        const c = conn.stmt(COUNTS).get({ queue: this.name, now }) as { pending: number; processing: number; dead: number; later: number };
        const heads = conn.stmt(PRIORITY_HEADS).all({ queue: this.name, now }) as { first_at: number; soon: number }[];
        let oldest: number | null = null;
        let soon = 0;
        for (const h of heads) {
          if (h.first_at <= now && (oldest === null || h.first_at < oldest)) oldest = h.first_at;
          soon += h.soon;
        }
        return {
          pending: c.pending,
          processing: c.processing,
          dead: c.dead,
          scheduled: c.later + soon,
          oldestPendingAgeMs: oldest === null ? 0 : Math.max(0, now - oldest),
        };
      })();
    });
  }

  listen(): WakeReceiver {
    return this.core.wakes(queueWakeChannel(this.name));
  }

  private claim(max: number, workerId: string | undefined, opts: ClaimOpts | undefined): Promise<Job[]> {
    try {
      const { workerId: worker, leaseMs } = claimInput(workerId, opts);
      return this.core
        .write('claim', (ctx) => ops.claimJobs(ctx, this.name, max, leaseMs, worker, randomUUID), true)
        .then((c) => {
          const jobs: Job[] = c.rows.map((r) => new SqliteJob(this.core, this.name, r));
          return jobs.length < max ? withNextDue(jobs, c.nextDueInMs) : jobs;
        });
    } catch (err) {
      return Promise.reject(err);
    }
  }
}

/** One write transaction inserts the job claimed by `slot`'s worker, or pending (and waking) when the queue's settings or the clock say no. */
function enqueueHandingOff(core: SqliteCore, queue: string, text: string, stamp: JobWrite, slot: HandoffSlot): Promise<number> {
  let written: Promise<{ id: number; claimed: ops.ClaimedRow | null }>;
  try {
    written = core.write('enqueue', (ctx) => ops.insertJobHandingOff(ctx, queue, text, stamp, slot.workerId, slot.leaseMs, randomUUID));
  } catch (err) {
    slot.cancel();
    throw err;
  }
  return written.then(
    (r) => {
      if (r.claimed) slot.deliver(new SqliteJob(core, queue, r.claimed));
      else slot.cancel();
      return r.id;
    },
    (err: unknown) => {
      slot.cancel();
      throw err;
    },
  );
}

/** A claimed job; every op is fenced by its claim token and deadline. */
export class SqliteJob implements Job {
  readonly id: number;
  readonly payload: unknown;
  readonly priority: number;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly claimToken: string;
  readonly leaseMs: number;
  readonly enqueuedAt: number;
  readonly headers: JobHeaders;
  readonly uniqueKey: string | null;
  readonly orderingKey: string | null;
  private currentDeadline: number;

  constructor(
    private readonly core: SqliteCore,
    readonly queue: string,
    row: ops.ClaimedRow,
  ) {
    this.id = row.id;
    this.payload = decodePayload(row.payload, `payload of job ${row.id}`);
    this.priority = row.priority;
    this.attempts = row.attempts;
    this.maxAttempts = row.max_attempts;
    this.claimToken = row.token;
    this.enqueuedAt = row.enqueued_at;
    this.currentDeadline = row.claimed_until;
    this.leaseMs = row.lease_ms;
    this.headers = decodeHeaders(row.headers);
    this.uniqueKey = row.unique_key;
    this.orderingKey = row.ordering_key;
  }

  get deadline(): number {
    return this.currentDeadline;
  }

  payloadAs<U>(): U {
    return this.payload as U;
  }

  async ack(result?: unknown): Promise<boolean> {
    const ok = needsOutcome(this, result)
      ? await outcomes.ackWithOutcome(this.core, this, result)
      : await this.core.write('ack', (ctx) => ops.ackJob(ctx, this.queue, this.id, this.claimToken, this.orderingKey === null));
    if (ok) this.core.outcomes.record(this.queue, 'completed');
    return ok;
  }

  async retry(error: unknown, delayMs?: number): Promise<boolean> {
    const delay = delayMs === undefined ? undefined : requireDurationMs('delayMs', delayMs, { allowZero: true });
    const text = errorText(error);
    // One draw per retry without a delay, before the write, as on PostgreSQL: the same random
    // sequence then gives the same delays on both engines. Checked here too, as PostgreSQL does
    // before its statement: a bad draw is refused even on the last attempt, which the write dead-letters.
    const r = delay === undefined ? requireRandomDraw('random', this.core.random()) : 0;
    await outcomes.flushProgress(this.core, this);
    const ok = await this.core.write('retry', (ctx) => ops.retryJob(ctx, this.queue, this.id, this.claimToken, text, delay, () => r));
    // The row goes dead when this claim was its last attempt (the same rule as the SQL).
    if (ok) this.core.outcomes.record(this.queue, this.attempts >= this.maxAttempts ? 'dead' : 'retried');
    await outcomes.wakeWaitersOfDead(this.core, this, ok && this.attempts >= this.maxAttempts);
    return ok;
  }

  async fail(error: unknown): Promise<boolean> {
    const text = errorText(error);
    await outcomes.flushProgress(this.core, this);
    const ok = await this.core.write('fail', (ctx) => ops.failJob(ctx, this.queue, this.id, this.claimToken, text));
    if (ok) this.core.outcomes.record(this.queue, 'dead');
    await outcomes.wakeWaitersOfDead(this.core, this, ok);
    return ok;
  }

  progress(value: unknown): Promise<boolean> {
    return reportProgress(this, value, (text) => outcomes.writeProgress(this.core, this, text));
  }

  async heartbeat(extendMs: number): Promise<boolean> {
    const ext = requireDurationMs('extendMs', extendMs);
    const deadline = await this.core.write('heartbeat', (ctx) => ops.heartbeatJob(ctx, this.id, this.claimToken, ext), false, ext);
    if (deadline === null) return false;
    this.currentDeadline = deadline;
    return true;
  }

  release(): Promise<boolean> {
    return this.core.write('release', (ctx) => ops.releaseJob(ctx, this.queue, this.id, this.claimToken));
  }
}
