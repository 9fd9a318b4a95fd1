import { queueWakeChannel } from '../../contract/names.js';
import type { JobWrite, QueueOpts } from '../../contract/options.js';
import type { JobInfo, QueueSettings, QueueStats, RedriveResult, WakeReceiver } from '../../contract/types.js';
import type {
  ClaimedRow,
  ClaimRef,
  ClaimResult,
  HandedOff,
  QueueDriver,
  ReceiptWrite,
} from '../shared/queue-driver.js';
import { QueueDriverBase } from '../shared/queue-driver.js';
import {
  always,
  enqueueResolved,
  extraParams,
  keyed,
  moved,
  promoted,
  redriveResult,
  rewinding,
  runWaking,
  stampParams,
  woke,
  type PgContext,
  type RedriveRow,
} from './context.js';
import type { ClaimWatermark } from './claim-gate.js';
import { num, numOrNull, type Rows } from './connection.js';
import type { JobRow } from './queue.sql.js';
import { toJobInfo } from '../shared/rows.js';
import { wakePayload } from './schema-sql.js';
import * as outcomes from './outcomes.js';
import * as flows from './flows.js';
import type { ChildResult, FlowNode, FlowPlan } from '../../contract/flows.js';
import { hasLimitKey, type ResolvedLimits } from '../../contract/limits.js';
import { limitedQueues, limitKeyParams, readLimits, setLimitsParams, sweepRateWindows } from './limits.js';
import { scanBound } from '../shared/limits.js';
import { EnqueueGroup } from './enqueue-group.js';
import type { RemoteTakers } from './remote-handoff.js';
import { handoffCandidate } from '../../internal/handoff.js';

/**
 * The PostgreSQL queue driver: each operation one statement (CTE claims with SKIP LOCKED, the
 * claim gate's plain claim while a queue has no settings, key rules in the engine's functions),
 * sent on the store's pool, its wake sent on commit with NOTIFY (docs/semantics.md, Engine drivers).
 */
export class PostgresQueueDriver extends QueueDriverBase<PgContext> implements QueueDriver {
  private readonly wake: string;
  /** `notified` of the statements that can promote an ordering key's next job: rewinds the claim watermarks when they did. */
  private readonly promotes: (r: Rows<object>) => boolean;

  constructor(
    private readonly ctx: PgContext,
    queue: string,
  ) {
    super(ctx, queue, outcomes);
    this.wake = wakePayload(queueWakeChannel(queue));
    this.promotes = rewinding(ctx, promoted);
  }

  guard(): void {
    this.ctx.guard();
  }

  insertOne(payloadText: string, stamp: JobWrite): Promise<number> {
    // Plain jobs share commits with the enqueues in flight beside them (enqueue-group.ts); keyed ones take their locks alone.
    if (keyed(stamp) || hasLimitKey(stamp))
      return enqueueResolved(this.ctx, this.ctx.exec, this.queue, payloadText, stamp);
    return this.group.add(payloadText, stamp);
  }

  /** Concurrent plain enqueues of this queue, one commit per group (see {@link EnqueueGroup}). */
  private readonly group = new EnqueueGroup((texts, stamp) =>
    texts.length === 1
      ? (this.ctx.remote && handoffCandidate(stamp) && this.ctx.remote.mayHaveOffers(this.queue)
          ? this.insertRemote(this.ctx.remote, texts[0]!, stamp)
          : enqueueResolved(this.ctx, this.ctx.exec, this.queue, texts[0]!, stamp)
        ).then((id) => [id])
      : this.insert(texts, stamp),
  );

  /**
   * A plain single enqueue that the local hand-off did not take: one statement hands it to an idle
   * worker of any store of the schema (`enqueueRemote`, remote-handoff.ts), or inserts it pending and
   * wakes. A slot of this store's own worker is delivered at once.
   */
  private async insertRemote(remote: RemoteTakers, text: string, stamp: JobWrite): Promise<number> {
    const { exec, sql } = this.ctx;
    const registering = remote.registered(this.queue);
    if (registering) await registering;
    const r = await exec.wakes.run(
      this.wake,
      (w) =>
        exec.run<JobRow & { taker: number | null; woke: string | null }>(sql.queue.enqueueRemote, [
          this.queue,
          text,
          ...stampParams(stamp),
          w,
          stamp.headersText,
          remote.lockClass,
        ]),
      woke,
    );
    const row = r.rows[0]!;
    if (row.taker !== null) remote.taken(row.taker, row);
    return num(row.id);
  }

  async insert(texts: readonly string[], stamp: JobWrite): Promise<number[]> {
    if (hasLimitKey(stamp)) return this.insertBulk(texts.map((text) => ({ text, stamp })));
    const exec = this.ctx.exec;
    const q = this.ctx.sql.queue;
    const r = keyed(stamp)
      ? await exec.wakes.run(
          this.wake,
          (w) =>
            exec.run<{ id: string }>(q.enqueueManyCall, [
              this.queue,
              texts,
              ...stampParams(stamp),
              w,
              ...extraParams(stamp),
            ]),
          always,
        )
      : await exec.wakes.run(
          this.wake,
          (w) =>
            exec.run<{ id: string }>(q.enqueueMany, [this.queue, texts, ...stampParams(stamp), w, stamp.headersText]),
          always,
        );
    return r.rows.map((row) => num(row.id));
  }

  /** One enqueue_job call per item in one transaction, every key lock taken first. */
  insertBulk(items: readonly { text: string; stamp: JobWrite }[]): Promise<number[]> {
    const { queue, wake } = this;
    const q = this.ctx.sql.queue;
    const orderingKeys = [
      ...new Set(items.flatMap((it) => (it.stamp.orderingKey === null ? [] : [it.stamp.orderingKey]))),
    ];
    const uniqueKeys = [...new Set(items.flatMap((it) => (it.stamp.uniqueKey === null ? [] : [it.stamp.uniqueKey])))];
    return this.ctx.inTransaction(async (exec) => {
      // Every key lock of the bulk first, in the canonical order (`lock_keys`): taken item by item,
      // two bulks with the same keys in different orders would deadlock.
      if (orderingKeys.length + uniqueKeys.length > 1) await exec.run(q.lockKeys, [queue, orderingKeys, uniqueKeys]);
      const ids: number[] = [];
      for (const it of items) {
        const r = hasLimitKey(it.stamp)
          ? await exec.wakes.run(
              wake,
              (w) =>
                exec.run<{ id: string }>(this.ctx.sql.limits.enqueueCall, [
                  queue,
                  it.text,
                  ...stampParams(it.stamp),
                  w,
                  ...extraParams(it.stamp),
                  ...limitKeyParams(it.stamp),
                ]),
              always,
            )
          : await exec.wakes.run(
              wake,
              (w) =>
                exec.run<{ id: string }>(q.enqueueCall, [
                  queue,
                  it.text,
                  ...stampParams(it.stamp),
                  w,
                  ...extraParams(it.stamp),
                ]),
              always,
            );
        ids.push(num(r.rows[0]!.id));
      }
      return ids;
    });
  }

  /** One statement inserts the job claimed by `workerId`, or pending (and waking) when the queue's settings or the clock say no. */
  async insertHandingOff(text: string, stamp: JobWrite, workerId: string, leaseMs: number | null): Promise<HandedOff> {
    const { exec, sql } = this.ctx;
    const watching = this.ctx.liveness?.watch(workerId);
    if (watching) await watching;
    // The idle worker's next claim would follow its watermark: look for a waiting job where that claim would.
    const mark = this.ctx.claims.watermark(this.queue);
    const r = await exec.wakes.run(
      this.wake,
      (w) =>
        mark === null
          ? exec.run<JobRow & { woke: string | null }>(sql.queue.enqueueHandoff, [
              this.queue,
              text,
              ...stampParams(stamp),
              w,
              stamp.headersText,
              workerId,
              leaseMs,
            ])
          : exec.run<JobRow & { woke: string | null }>(sql.queue.enqueueHandoffAfter, [
              this.queue,
              text,
              ...stampParams(stamp),
              w,
              stamp.headersText,
              workerId,
              leaseMs,
              mark.priority,
              mark.runAt,
            ]),
      woke,
    );
    const row = r.rows[0]!;
    return { id: num(row.id), claimed: row.state === 'processing' ? claimedRow(row, leaseMs) : null };
  }

  async claim(max: number, leaseMs: number | null, workerId: string | null, follows = false): Promise<ClaimResult> {
    const { ctx, queue } = this;
    // Dead worker detection: the id's lock is held before any job is claimed with it (liveness.ts).
    const watching = workerId === null ? undefined : ctx.liveness?.watch(workerId);
    if (watching) await watching;
    const gate = ctx.claims;
    const exec = ctx.exec;
    const rows: ClaimedRow[] = [];
    const limited = limitedQueues(ctx);
    if (limited.has(queue)) return this.claimLimited(max, leaseMs, workerId, rows);
    const mark = follows ? gate.watermark(queue) : null;
    if (mark !== null) {
      if (gate.sweepDue(queue)) this.sweep(mark);
      const rewinds = gate.rewinds;
      const r = await exec.run<(JobRow | { id: null }) & { next_due_in: string | null }>(ctx.sql.queue.claimAfter, [
        queue,
        max,
        leaseMs,
        workerId,
        ctx.claimDeferred,
        mark.priority,
        mark.runAt,
      ]);
      for (const row of r.rows) if (row.id !== null) rows.push(claimedRow(row, leaseMs));
      const last = lastFresh(r.rows);
      if (last !== null) gate.advance(queue, last, rewinds);
      if (rows.length >= max) return { rows, nextDueInMs: null };
      // Nothing, and the watermark moved less than a sweep interval ago: a job stamped before it whose enqueue committed after
      // the claim that moved it would wait for the sweep. Look that far behind once more (claimed as any
      // claim after the watermark; the watermark itself does not move back).
      const near = rows.length === 0 ? gate.nearMark(queue) : null;
      if (near !== null) {
        const back = await exec.run<JobRow | { id: null }>(ctx.sql.queue.claimAfter, [
          queue,
          max - rows.length,
          leaseMs,
          workerId,
          ctx.claimDeferred,
          near.priority,
          near.runAt,
        ]);
        for (const row of back.rows) if (row.id !== null) rows.push(claimedRow(row, leaseMs));
        if (rows.length >= max) return { rows, nextDueInMs: null };
      }
      // Short: back no later than the next sweep is due, or soon while one runs (either may call for
      // the full claim, which finds what this one cannot).
      const due = numOrNull(r.rows[0]?.next_due_in ?? null);
      const sweep = gate.sweepDueIn(queue);
      return { rows, nextDueInMs: due === null ? sweep : Math.min(due, sweep) };
    }
    // A worker's claim whose watermark is no longer offered (its sweep is late, or the settings are not
    // trusted) runs the full claim: a plain one would walk the head as well, and only a full claim sets the
    // watermark going again (a backlog would otherwise keep its claims plain, from the head, for good).
    if (!(follows && gate.hasMark(queue)) && gate.usePlain(queue)) {
      const r = await exec.run<JobRow & { exhausted: boolean }>(ctx.sql.queue.claimPlain, [
        queue,
        max,
        leaseMs,
        workerId,
        ctx.claimDeferred,
      ]);
      for (const row of r.rows) rows.push(claimedRow(row, leaseMs));
      // A full batch with nothing to bury is the whole claim; otherwise the full claim takes the
      // rest (often nothing) and buries, so this call does all a full claim would have done.
      if (rows.length >= max && !r.rows.some((row) => row.exhausted)) return { rows, nextDueInMs: null };
    }
    const started = gate.begin();
    const r = await exec.wakes.run(
      this.wake,
      (w) =>
        exec.run<(JobRow | { id: null }) & { limited: boolean; limits: boolean; next_due_in: string | null }>(
          ctx.sql.queue.claim,
          [queue, max - rows.length, leaseMs, workerId, w, ctx.claimDeferred],
        ),
      this.promotes,
    );
    // The statement always returns a row (see q_claim); an empty claim is one row of nulls.
    for (const row of r.rows) if (row.id !== null) rows.push(claimedRow(row, leaseMs));
    gate.fullDone(queue, started, r.rows[0]?.limited !== false, rows.length >= max, lastFresh(r.rows));
    if (r.rows[0]?.limits === true) {
      // The queue has limits: that claim handed out nothing; the limited claim takes the rest.
      limited.add(queue);
      return this.claimLimited(max, leaseMs, workerId, rows);
    }
    return { rows, nextDueInMs: numOrNull(r.rows[0]?.next_due_in ?? null) };
  }

  /**
   * The sweep of the queue after `mark` (`q_claim_sweep`), beside the worker's claims and not awaited
   * by them; a failure drops the watermark (the next claim is a full one and reports what is wrong).
   */
  private sweep(mark: ClaimWatermark): void {
    const { ctx, queue } = this;
    const gate = ctx.claims;
    const started = gate.sweepBegin(queue);
    void ctx.exec
      .run<{ limited: boolean; behind: boolean }>(ctx.sql.queue.claimSweep, [queue, mark.priority, mark.runAt])
      .then(
        (r) => gate.sweepDone(queue, started, r.rows[0]?.limited !== false, r.rows[0]?.behind !== false),
        () => gate.sweepDone(queue, started, true, true),
      );
  }

  /** The limited claim (limits.sql.ts) for what `rows` does not hold yet; a queue found without limits goes back to `claim`. */
  private async claimLimited(
    max: number,
    leaseMs: number | null,
    workerId: string | null,
    rows: ClaimedRow[],
  ): Promise<ClaimResult> {
    const { ctx, queue } = this;
    const exec = ctx.exec;
    const want = max - rows.length;
    const r = await exec.wakes.run(
      this.wake,
      (w) =>
        exec.run<(JobRow | { id: null }) & { limits: boolean; next_due_in: string | null }>(ctx.sql.limits.claim, [
          queue,
          want,
          leaseMs,
          workerId,
          w,
          ctx.claimDeferred,
          scanBound(want),
        ]),
      this.promotes,
    );
    for (const row of r.rows) if (row.id !== null) rows.push(claimedRow(row, leaseMs));
    if (r.rows[0]?.limits !== true) limitedQueues(ctx).delete(queue);
    return { rows, nextDueInMs: numOrNull(r.rows[0]?.next_due_in ?? null) };
  }

  async ack(job: ClaimRef): Promise<boolean> {
    const q = this.ctx.sql.queue;
    const r = job.plain
      ? await this.ctx.exec.run<Counted>(q.ackPlain, [job.id, job.claimToken])
      : await runWaking<Counted>(this.ctx, q.ack, [job.id, job.claimToken], this.wake, this.promotes);
    return (await this.ended(counted(r))) > 0;
  }

  /** `n` jobs ended: when the queue has limits, a key may have room again, so its workers are woken. */
  private async ended(n: number): Promise<number> {
    if (n > 0 && limitedQueues(this.ctx).has(this.queue))
      await runWaking(this.ctx, this.ctx.sql.notify.notify, [], this.wake, always);
    return n;
  }

  async ackBatch(jobs: readonly ClaimRef[], receipts?: ReceiptWrite | null): Promise<number> {
    const q = this.ctx.sql.queue;
    const ids = jobs.map((j) => j.id);
    const tokens = jobs.map((j) => j.claimToken);
    // One statement for the batch: the plain one only when no job can need its key promoted.
    if (jobs.every((j) => j.plain)) {
      const r = receipts
        ? await this.ctx.exec.run<Counted>(q.ackBatchPlainReceipts, [
            this.queue,
            ids,
            tokens,
            receipts.outbox,
            receipts.rows.map((x) => x.messageId),
            receipts.rows.map((x) => x.receiptText),
          ])
        : await this.ctx.exec.run<Counted>(q.ackBatchPlain, [this.queue, ids, tokens]);
      return this.ended(counted(r));
    }
    // Keys to promote: the receipts first, then the waking ack (rare for an outbox: two statements).
    if (receipts) await this.putReceipts(receipts);
    const r = await runWaking<Counted & { held: string[] | null }>(
      this.ctx,
      q.ackBatch,
      [this.queue, ids, tokens],
      this.wake,
      this.promotes,
    );
    let n = counted(r);
    // Jobs whose ordering key another transaction (a producer's) holds: the batch left them rather than
    // wait for a key while holding others (q_ack_batch). Each is acked on its own, waiting for its key only.
    for (const id of r.rows[0]?.held ?? []) {
      const job = jobs.find((j) => j.id === num(id));
      if (job)
        n += counted(await runWaking<Counted>(this.ctx, q.ack, [job.id, job.claimToken], this.wake, this.promotes));
    }
    return this.ended(n);
  }

  async putReceipts(receipts: ReceiptWrite): Promise<void> {
    await this.ctx.exec.run(this.ctx.sql.inbox.putReceipts, [
      receipts.outbox,
      receipts.rows.map((x) => x.messageId),
      receipts.rows.map((x) => x.receiptText),
    ]);
  }

  async retry(job: ClaimRef, delayMs: number, errorText: string, detail?: string): Promise<'retried' | 'dead' | null> {
    const r = await runWaking<{ state: string; woke: string | null; promoted: string }>(
      this.ctx,
      this.ctx.sql.queue.retry,
      [job.id, job.claimToken, delayMs, errorText, detail ?? errorText],
      this.wake,
      (x) => this.promotes(x) || woke(x),
    );
    const row = r.rows[0];
    // A retried or dead-lettered job leaves its key's slot: in a queue with limits, its workers may claim again.
    if (row !== undefined) await this.ended(1);
    return row === undefined ? null : row.state === 'dead' ? 'dead' : 'retried';
  }

  async fail(job: ClaimRef, errorText: string, detail?: string): Promise<boolean> {
    return (
      (await this.ended(
        counted(
          await runWaking<Counted>(
            this.ctx,
            this.ctx.sql.queue.fail,
            [job.id, job.claimToken, errorText, detail ?? errorText],
            this.wake,
            this.promotes,
          ),
        ),
      )) > 0
    );
  }

  async heartbeat(job: ClaimRef, extendMs: number): Promise<number | null> {
    const r = await this.ctx.exec.run<{ claimed_until: string }>(this.ctx.sql.queue.heartbeat, [
      job.id,
      job.claimToken,
      extendMs,
    ]);
    return r.rows[0] ? num(r.rows[0].claimed_until) : null;
  }

  async release(job: ClaimRef): Promise<boolean> {
    const r = await runWaking(
      this.ctx,
      this.ctx.sql.queue.release,
      [job.id, job.claimToken],
      this.wake,
      (x) => x.rows.length > 0,
    );
    return r.rows.length > 0;
  }

  getJob(id: number): Promise<JobInfo | null> {
    return outcomes.getJobWithOutcome(this.ctx, this.queue, id);
  }

  async ackOutcome(
    job: ClaimRef,
    resultText: string | null,
    progressText: string | null,
    settles = false,
  ): Promise<boolean> {
    return (
      (await this.ended(
        (await outcomes.ackWithOutcome(this.ctx, this.queue, { job, resultText, progressText, settles })) ? 1 : 0,
      )) > 0
    );
  }

  queueOptsOf(queue: string): Required<QueueOpts> {
    return this.ctx.queueOpts(queue);
  }

  insertFlow(plan: FlowPlan): Promise<FlowNode> {
    return this.ctx.inTransaction((exec) => flows.insertFlow(this.ctx, exec, plan));
  }

  settleFlows(ids: readonly number[]): Promise<void> {
    return this.ctx.inTransaction((exec) => flows.settle(this.ctx, exec, ids));
  }

  pendingDependencies(id: number): Promise<number> {
    return flows.pendingDependencies(this.ctx, id);
  }

  childResults(id: number): Promise<ChildResult[]> {
    return flows.readChildResults(this.ctx, id);
  }

  liveDescendants(id: number): Promise<{ id: number; queue: string }[]> {
    return flows.liveDescendants(this.ctx, id);
  }

  listenOn(channel: string): WakeReceiver {
    return this.ctx.hub.listen(channel);
  }

  async getJobByKey(uniqueKey: string): Promise<JobInfo | null> {
    const r = await this.ctx.exec.run<JobRow>(this.ctx.sql.queue.getJobByKey, [this.queue, uniqueKey]);
    return r.rows[0] ? toJobInfo(r.rows[0]) : null;
  }

  setPaused(paused: boolean): Promise<void> {
    return this.changeSettings(() =>
      runWaking(this.ctx, this.ctx.sql.queue.setPaused, [this.queue, paused], this.wake, woke),
    );
  }

  setRateLimit(limit: { max: number; perMs: number } | null): Promise<void> {
    return this.changeSettings(() =>
      runWaking(
        this.ctx,
        this.ctx.sql.queue.setRateLimit,
        [this.queue, limit?.max ?? null, limit?.perMs ?? null],
        this.wake,
        always,
      ),
    );
  }

  setLimits(limits: ResolvedLimits): Promise<void> {
    return this.changeSettings(() =>
      runWaking(this.ctx, this.ctx.sql.limits.setLimits, [this.queue, ...setLimitsParams(limits)], this.wake, always),
    );
  }

  async settings(): Promise<QueueSettings> {
    const r = await this.ctx.exec.run<{ paused: boolean; rate_max: number | null; rate_per_ms: string | null }>(
      this.ctx.sql.queue.getSettings,
      [this.queue],
    );
    const row = r.rows[0];
    const limits = await readLimits(this.ctx, this.ctx.exec, this.queue);
    if (!row) return { paused: false, rateLimit: null, ...limits };
    return {
      paused: row.paused,
      rateLimit: row.rate_max === null ? null : { max: row.rate_max, perMs: num(row.rate_per_ms) },
      ...limits,
    };
  }

  async sweepExpired(): Promise<{ expired: number; purged: number }> {
    // Two statements on purpose: rows expired now are purged in the same call when their retention is 0.
    const expired = await runWaking<Counted>(
      this.ctx,
      this.ctx.sql.queue.expire,
      [this.queue],
      this.wake,
      this.promotes,
    );
    const purged = await this.ctx.exec.run<Counted>(this.ctx.sql.queue.purgeRetained, [this.queue]);
    await flows.sweepFlows(this.ctx, this.queue);
    await this.ctx.exec.run(this.ctx.sql.queue.pruneAttempts, [this.queue]);
    await sweepRateWindows(this.ctx, this.ctx.exec, this.queue);
    return {
      expired: counted(expired),
      purged: counted(purged) + (await outcomes.purgeOutcomes(this.ctx, this.queue)),
    };
  }

  async listDead(before: number | null, after: number | null, limit: number): Promise<JobInfo[]> {
    const r = await this.ctx.exec.run<JobRow>(this.ctx.sql.queue.listDead, [this.queue, before, after, limit]);
    return r.rows.map(toJobInfo);
  }

  async retryDead(ids: readonly number[]): Promise<RedriveResult> {
    return redriveResult(
      await runWaking<RedriveRow>(this.ctx, this.ctx.sql.queue.retryDead, [this.queue, ids], this.wake, moved),
    );
  }

  async purgeDead(ids: readonly number[]): Promise<number> {
    return counted(await this.ctx.exec.run<Counted>(this.ctx.sql.queue.purgeDead, [this.queue, ids]));
  }

  async stats(): Promise<QueueStats> {
    const r = await this.ctx.exec.run<{
      pending: string;
      processing: string;
      dead: string;
      scheduled: string;
      oldest: string;
    }>(this.ctx.sql.queue.stats, [this.queue]);
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
    return this.ctx.hub.listen(queueWakeChannel(this.queue));
  }

  /** Runs a settings statement; whatever happens, this store's next claim of the queue reads the settings again. */
  private async changeSettings(statement: () => Promise<unknown>): Promise<void> {
    try {
      await statement();
    } finally {
      this.ctx.claims.invalidate(this.queue);
    }
  }
}

/** A claimed `JobRow`; `leaseOverrideMs` null = the row's stamped visibility timeout. */
/** The watermark of a claim's rows (claim order): its last fresh row (not a lapsed one); null for none. */
function lastFresh(rows: readonly (JobRow | { id: null })[]): ClaimWatermark | null {
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!;
    if (row.id !== null && (row as { fresh?: boolean }).fresh !== false)
      return { priority: (row as JobRow).priority, runAt: num((row as JobRow).run_at) };
  }
  return null;
}

function claimedRow(row: JobRow, leaseOverrideMs: number | null): ClaimedRow {
  return {
    id: num(row.id),
    queue: row.queue,
    payloadText: row.payload,
    priority: row.priority,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    claimToken: row.claim_token!,
    deadline: num(row.claimed_until),
    leaseMs: leaseOverrideMs ?? num(row.visibility_timeout_ms),
    enqueuedAt: num(row.enqueued_at),
    headersText: row.headers,
    uniqueKey: row.unique_key,
    orderingKey: row.ordering_key,
    backoffBaseMs: num(row.backoff_base_ms),
    runAt: num(row.run_at),
  };
}

export { toJobInfo };

/** A claimed `JobRow` as the queue handle's row (`leaseOverrideMs` null = the row's stamped visibility timeout). */
export const claimedRowOf = claimedRow;

/** Statements that end jobs return one row `{ n }`. */
interface Counted {
  n: string;
}

function counted(r: { rows: Counted[] }): number {
  return num(r.rows[0]?.n ?? 0);
}
