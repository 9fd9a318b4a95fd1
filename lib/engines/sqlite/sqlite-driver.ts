import { randomUUID } from 'node:crypto';
import { Closed } from '../../contract/errors.js';
import { queueWakeChannel } from '../../contract/names.js';
import { DEFAULT_QUEUE_OPTS, type JobWrite, type QueueOpts } from '../../contract/options.js';
import type { JobInfo, QueueSettings, QueueStats, RedriveResult, WakeReceiver } from '../../contract/types.js';
import type { ClaimRef, ClaimResult, HandedOff, QueueDriver, ReceiptWrite } from '../shared/queue-driver.js';
import { QueueDriverBase } from '../shared/queue-driver.js';
import { putReceiptRows } from './inbox.js';
import { ackDeliveredPlain } from './outbox-ack.js';
import type { SqliteCore } from './context.js';
import { COUNTS, PRIORITY_HEADS } from './counts.sql.js';
import * as ops from './queue-ops.js';
import * as Q from './queue.sql.js';
import { toJobInfo, type JobRow } from './rows.js';
import * as outcomes from './outcomes.js';
import * as flows from './flows.js';
import type { ChildResult, FlowNode, FlowPlan } from '../../contract/flows.js';
import { limitSettings, setLimits, sweepRateWindows, type LimitSettings } from './limits.js';
import type { ResolvedLimits } from '../../contract/limits.js';

/** The store under a queue driver: its write and read paths, and whether it is closed. */
export type SqliteQueueCore = SqliteCore & { readonly closed: boolean };

/**
 * The SQLite queue driver: every write one synchronous function of queue-ops.ts run in a write
 * transaction of the store's group-commit writer (which also hands out the file's write tickets),
 * every read on the read connection (docs/semantics.md, Engine drivers).
 */
export class SqliteQueueDriver extends QueueDriverBase<SqliteQueueCore> implements QueueDriver {
  constructor(
    private readonly core: SqliteQueueCore,
    queue: string,
  ) {
    super(core, queue, outcomes);
  }

  guard(): void {
    if (this.core.closed) throw new Closed();
  }

  insert(texts: readonly string[], stamp: JobWrite): Promise<number[]> {
    return this.core.write('enqueueMany', (ctx) => ops.insertJobs(ctx, this.queue, texts, stamp));
  }

  insertOne(text: string, stamp: JobWrite): Promise<number> {
    return this.core.write('enqueue', (ctx) => ops.insertJobs(ctx, this.queue, [text], stamp)[0]!);
  }

  insertBulk(items: readonly { text: string; stamp: JobWrite }[]): Promise<number[]> {
    return this.core.write('enqueueBulk', (ctx) =>
      items.map((it) => ops.insertJobs(ctx, this.queue, [it.text], it.stamp)[0]!),
    );
  }

  insertHandingOff(text: string, stamp: JobWrite, workerId: string, leaseMs: number | null): Promise<HandedOff> {
    const lv = this.core.liveness;
    if (lv?.needs(workerId))
      return this.core
        .write('enqueue', (ctx) => {
          lv.record(ctx, workerId);
          return ops.insertJobHandingOff(ctx, this.queue, text, stamp, workerId, leaseMs, randomUUID);
        })
        .then((r) => (lv.recorded(workerId), r));
    return this.core.write('enqueue', (ctx) =>
      ops.insertJobHandingOff(ctx, this.queue, text, stamp, workerId, leaseMs, randomUUID),
    );
  }

  claim(max: number, leaseMs: number | null, workerId: string | null): Promise<ClaimResult> {
    // Dead worker detection: the id is recorded as this process's in the transaction of its first claim (liveness.ts).
    const lv = this.core.liveness;
    if (lv?.needs(workerId))
      return this.core
        .write(
          'claim',
          (ctx) => {
            lv.record(ctx, workerId);
            return ops.claimJobs(ctx, this.queue, max, leaseMs, workerId, randomUUID);
          },
          true,
        )
        .then((r) => (lv.recorded(workerId), r));
    return this.core.write('claim', (ctx) => ops.claimJobs(ctx, this.queue, max, leaseMs, workerId, randomUUID), true);
  }

  ack(job: ClaimRef): Promise<boolean> {
    return this.core.write('ack', (ctx) => ops.ackJob(ctx, this.queue, job.id, job.claimToken, job.plain));
  }

  ackBatch(jobs: readonly ClaimRef[], receipts?: ReceiptWrite | null): Promise<number> {
    if (!receipts) return this.core.write('ackBatch', (ctx) => ops.ackJobs(ctx, this.queue, jobs));
    // The receipts and the acks in one write transaction (two statements for the batch when no job has a key).
    if (jobs.every((j) => j.plain))
      return this.core.write('ackBatch', (ctx) => ackDeliveredPlain(ctx, this.queue, jobs, receipts));
    return this.core.write('ackBatch', (ctx) => {
      putReceiptRows(ctx, receipts.outbox, receipts.rows);
      return ops.ackJobs(ctx, this.queue, jobs);
    });
  }

  putReceipts(receipts: ReceiptWrite): Promise<void> {
    return this.core.write('outbox.recordReceipts', (ctx) => putReceiptRows(ctx, receipts.outbox, receipts.rows));
  }

  retry(job: ClaimRef, delayMs: number, errorText: string, detail?: string): Promise<'retried' | 'dead' | null> {
    return this.core.write('retry', (ctx) =>
      ops.retryJob(ctx, this.queue, job.id, job.claimToken, errorText, delayMs, detail ?? errorText),
    );
  }

  fail(job: ClaimRef, errorText: string, detail?: string): Promise<boolean> {
    return this.core.write('fail', (ctx) =>
      ops.failJob(ctx, this.queue, job.id, job.claimToken, errorText, detail ?? errorText),
    );
  }

  /** An urgent write: a lease renewal goes ahead of queued group commits (Writer.writeUrgent). */
  heartbeat(job: ClaimRef, extendMs: number): Promise<number | null> {
    return this.core.write(
      'heartbeat',
      (ctx) => ops.heartbeatJob(ctx, job.id, job.claimToken, extendMs),
      false,
      extendMs,
    );
  }

  release(job: ClaimRef): Promise<boolean> {
    return this.core.write('release', (ctx) => ops.releaseJob(ctx, this.queue, job.id, job.claimToken));
  }

  getJob(id: number): Promise<JobInfo | null> {
    return outcomes.getJobWithOutcome(this.core, this.queue, id);
  }

  ackOutcome(job: ClaimRef, resultText: string | null, progressText: string | null, settles = false): Promise<boolean> {
    return outcomes.ackWithOutcome(this.core, this.queue, { job, resultText, progressText, settles });
  }

  queueOptsOf(queue: string): Required<QueueOpts> {
    return this.core.registeredQueueOpts(queue, DEFAULT_QUEUE_OPTS);
  }

  insertFlow(plan: FlowPlan): Promise<FlowNode> {
    return this.core.write('enqueueFlow', (ctx) => flows.insertFlow(ctx, plan));
  }

  settleFlows(ids: readonly number[]): Promise<void> {
    return this.core.write('settleFlows', (ctx) => flows.settle(ctx, ids));
  }

  pendingDependencies(id: number): Promise<number> {
    return this.core.read('pendingDependencies', (conn) => flows.pendingDependencies(conn, id));
  }

  childResults(id: number): Promise<ChildResult[]> {
    return this.core.read('childResults', (conn) => flows.readChildResults(conn, id));
  }

  liveDescendants(id: number): Promise<{ id: number; queue: string }[]> {
    return this.core.read('liveDescendants', (conn) => flows.liveDescendants(conn, id));
  }

  listenOn(channel: string): WakeReceiver {
    return this.core.wakes(channel);
  }

  async getJobByKey(uniqueKey: string): Promise<JobInfo | null> {
    const row = await this.core.read(
      'getJobByKey',
      (conn) => conn.stmt(Q.GET_JOB_BY_KEY).get(this.queue, uniqueKey) as JobRow | undefined,
    );
    return row ? toJobInfo(row) : null;
  }

  setPaused(paused: boolean): Promise<void> {
    return this.core.write(paused ? 'pause' : 'resume', (ctx) => ops.setPaused(ctx, this.queue, paused));
  }

  setRateLimit(limit: { max: number; perMs: number } | null): Promise<void> {
    return this.core.write('setRateLimit', (ctx) =>
      ops.setRateLimit(ctx, this.queue, limit?.max ?? null, limit?.perMs ?? null),
    );
  }

  setLimits(limits: ResolvedLimits): Promise<void> {
    return this.core.write('setLimits', (ctx) => setLimits(ctx, this.queue, limits));
  }

  async settings(): Promise<QueueSettings> {
    const row = await this.core.read(
      'settings',
      (conn) =>
        conn.stmt(Q.GET_SETTINGS).get(this.queue) as
          ({ paused: number; rate_max: number | null; rate_per_ms: number | null } & LimitSettings) | undefined,
    );
    if (!row) return { paused: false, rateLimit: null, ...limitSettings(undefined) };
    return {
      paused: row.paused !== 0,
      rateLimit:
        row.rate_max === null || row.rate_per_ms === null ? null : { max: row.rate_max, perMs: row.rate_per_ms },
      ...limitSettings(row),
    };
  }

  sweepExpired(): Promise<{ expired: number; purged: number }> {
    return this.core.write('sweepExpired', (ctx) => {
      const r = ops.sweepQueue(ctx, this.queue);
      flows.sweepFlows(ctx, this.queue);
      sweepRateWindows(ctx, this.queue);
      return { expired: r.expired, purged: r.purged + outcomes.purgeOutcomes(ctx, this.queue) };
    });
  }

  async listDead(before: number | null, after: number | null, limit: number): Promise<JobInfo[]> {
    const rows = await this.core.read(
      'listDead',
      (conn) => conn.stmt(Q.LIST_DEAD).all({ queue: this.queue, before, after: after ?? 0, limit }) as JobRow[],
    );
    return rows.map(toJobInfo);
  }

  retryDead(ids: readonly number[]): Promise<RedriveResult> {
    return this.core.write('retryDead', (ctx) => ops.retryDeadJobs(ctx, this.queue, ids));
  }

  purgeDead(ids: readonly number[]): Promise<number> {
    return this.core.write('purgeDead', (ctx) => ops.purgeDeadJobs(ctx, this.queue, ids));
  }

  stats(): Promise<QueueStats> {
    return this.core.read('stats', (conn) => {
      // One read transaction, so the counters and the index probes see the same snapshot.
      return conn.db.transaction(() => {
        const now = conn.now();
        const c = conn.stmt(COUNTS).get({ queue: this.queue, now }) as {
          pending: number;
          processing: number;
          dead: number;
          later: number;
        };
        const heads = conn.stmt(PRIORITY_HEADS).all({ queue: this.queue, now }) as { first_at: number; soon: number }[];
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
    return this.core.wakes(queueWakeChannel(this.queue));
  }
}
