import { getJobWithOutcome, outcomeExtras, type FullRow } from './outcomes.js';
import {
  LATENCY_BUCKETS,
  WORKER_SCAN_ROWS,
  FLOW_VIEW_EDGES,
  type FlowView,
  type JobAttempt,
  type JobDetail,
  type JobEdit,
  type JobPage,
  type JobSearch,
  type JobSearchPage,
  type ListenerState,
  type ListJobsOpts,
  type LockInfo,
  type NamePageOpts,
  type ReceiptPage,
  type ReceiptPageOpts,
  type StoreAdmin,
  type StreamInfo,
  type ThroughputPoint,
  type WorkerInfo,
  NODE_SCAN_ROWS,
  type NodeHeartbeat,
  type NodeInfo,
} from '../../contract/admin.js';
import { requireWaitingIds, toFlowView, type FlowEdgeRow } from '../../internal/admin-flows.js';
import { receiptPage, resolveJobEdit, resolveReceiptPage, toWorkers } from '../../internal/admin-extras.js';
import { AUDIT_STREAM, queueWakeChannel } from '../../contract/names.js';
import type { JobInfo, RedriveResult, Stream } from '../../contract/types.js';
import { requireInt, requireJobId, requireNonBlankString, validateStoredName } from '../../contract/validate.js';
import { resolveHeartbeat, toNode } from '../../internal/fleet.js';
import { resolveSearch, searchPage } from '../../internal/job-search.js';
import {
  encodeCursor,
  keyOf,
  validateQueue,
  resolveJobListQuery,
  resolveNamePage,
  resolveSince,
  THROUGHPUT_RETENTION_MS,
  walkClaimOrder,
} from '../../internal/admin-paging.js';
import type { OutcomeRow } from '../../internal/outcome-counter.js';
import { moved as movedAny, redriveResult, runWaking, type PgContext, type RedriveRow } from './context.js';
import { num } from './connection.js';
import { toJobInfo } from './postgres-driver.js';
import { PostgresStream } from './stream.js';
import type { JobRow } from './queue.sql.js';
import { wakePayload } from './schema-sql.js';

const MIN_RUN_AT = -Number.MAX_SAFE_INTEGER;

/** `StoreAdmin` on PostgreSQL: every list walks an index by keyset, every count is capped. */
export class PostgresAdmin implements StoreAdmin {
  constructor(
    private readonly ctx: PgContext,
    private readonly listenerState: () => ListenerState,
  ) {}

  async queueNames(): Promise<string[]> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{ q: string }>(this.ctx.sql.admin.queueNames, []);
    return r.rows.map((row) => row.q);
  }

  async listJobs(queue: string, opts?: ListJobsOpts): Promise<JobPage> {
    this.ctx.guard();
    const name = validateQueue(queue);
    const q = resolveJobListQuery(opts);
    const a = this.ctx.sql.admin;
    let rows: JobRow[];
    if (q.state === 'pending' || q.state === 'scheduled') {
      const floor = q.state === 'scheduled' ? await this.now() : MIN_RUN_AT;
      rows = await walkClaimOrder(
        q.after,
        q.limit + 1,
        floor,
        (atMost) => this.nextPriority(name, atMost),
        async (p, runAt, id, limit) =>
          (await this.ctx.exec.run<JobRow>(a.pendingOfPriority, [name, p, runAt, id, limit])).rows,
      );
    } else if (q.state === 'processing') {
      rows = (
        await this.ctx.exec.run<JobRow>(a.processing, [name, q.after?.[0] ?? null, q.after?.[1] ?? 0, q.limit + 1])
      ).rows;
    } else {
      rows = (
        await this.ctx.exec.run<JobRow>(q.state === 'dead' ? a.dead : a.all, [name, q.after?.[0] ?? 0, q.limit + 1])
      ).rows;
    }
    const jobs = rows.slice(0, q.limit).map(toJobInfo);
    const last = jobs[jobs.length - 1];
    return { jobs, next: rows.length > q.limit && last ? encodeCursor(q.state, keyOf(q.state, last)) : null };
  }

  async searchJobs(queue: string, query?: JobSearch): Promise<JobSearchPage> {
    this.ctx.guard();
    const name = validateQueue(queue);
    const q = resolveSearch(query);
    // Dead jobs through the dead index; the history and `all` read the outcome records too; the live states only the jobs table.
    const sql =
      q.rowState === 'dead'
        ? this.ctx.sql.search.searchDead
        : q.rowState === 'finished' || q.rowState === null
          ? this.ctx.sql.search.searchWithOutcomes
          : this.ctx.sql.search.search;
    const r = await this.ctx.exec.run<FullRow & { scanned: string; low: string | null }>(sql, [
      name,
      q.before,
      q.rowState,
      q.budget,
      q.futureOnly,
      q.id,
      q.uniqueKey,
      q.orderingKey,
      q.enqueuedFrom,
      q.enqueuedTo,
      q.error,
      q.payloadPath,
      q.payloadType,
      q.payloadText,
      q.payloadNumber === null ? null : String(q.payloadNumber),
      q.limit + 1,
      q.headerName,
      q.headerValue,
    ]);
    const first = r.rows[0];
    const hits = r.rows.filter((row) => row.id !== null).map((row) => ({ ...toJobInfo(row), ...outcomeExtras(row) }));
    return searchPage(q, hits, num(first?.scanned ?? 0), first?.low == null ? null : num(first.low));
  }

  async jobDetail(queue: string, id: number): Promise<JobDetail | null> {
    this.ctx.guard();
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    const r = await this.ctx.exec.run<JobRow & { worker_id: string | null; blocked: boolean }>(
      this.ctx.sql.search.detail,
      [name, jobId],
    );
    const row = r.rows[0];
    // Progress, and the outcome record of a completed or cancelled job.
    const full = await getJobWithOutcome(this.ctx, name, jobId, toJobInfo);
    if (!row && !full) return null;
    const a = await this.ctx.exec.run<AttemptRow>(this.ctx.sql.admin.attempts, [name, jobId]);
    const failedAttempts = a.rows.map((x) => ({
      attempt: x.attempt,
      workerId: x.worker_id,
      claimedAt: x.claimed_at === null ? null : num(x.claimed_at),
      endedAt: num(x.ended_at),
      outcome: x.outcome,
      error: x.error,
    }));
    if (!row) return { ...full!, workerId: null, blocked: false, failedAttempts };
    return {
      ...toJobInfo(row),
      ...(full?.progress === undefined ? {} : { progress: full.progress }),
      workerId: row.worker_id,
      blocked: row.blocked,
      failedAttempts,
    };
  }

  async flowOf(id: number): Promise<FlowView> {
    this.ctx.guard();
    const job = requireJobId('id', id);
    const a = this.ctx.sql.admin;
    const [edges, parents, wait] = await Promise.all([
      this.ctx.exec.run<FlowEdgeRow>(a.flowEdges, [job, FLOW_VIEW_EDGES + 1]),
      this.ctx.exec.run<{ id: string; queue: string }>(a.flowParents, [job]),
      this.ctx.exec.run<{ pending: number; policy: string }>(a.flowWait, [job]),
    ]);
    return toFlowView(edges.rows, parents.rows, wait.rows[0]);
  }

  async waitingOn(ids: readonly number[]): Promise<Map<number, number>> {
    this.ctx.guard();
    const list = requireWaitingIds(ids);
    if (list.length === 0) return new Map();
    const r = await this.ctx.exec.run<{ job_id: string; pending: number }>(this.ctx.sql.admin.waitingOn, [list]);
    return new Map(r.rows.map((x) => [num(x.job_id), num(x.pending)]));
  }

  async editJob(queue: string, id: number, edit: JobEdit): Promise<boolean> {
    this.ctx.guard();
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    const e = resolveJobEdit(edit, this.ctx.maxPayloadBytes);
    const r = await runWaking<{ n: string; woke: string | null }>(
      this.ctx,
      this.ctx.sql.admin.editPending,
      [name, jobId, e.payloadText, e.priority, e.runAt],
      wakePayload(queueWakeChannel(name)),
      (x) => x.rows[0]?.woke !== null && x.rows[0]?.woke !== undefined,
    );
    return num(r.rows[0]?.n ?? 0) > 0;
  }

  async workers(): Promise<WorkerInfo[]> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{
      worker_id: string;
      queue: string;
      jobs: string;
      low: string;
      high: string;
      now: string;
    }>(this.ctx.sql.admin.workers, [WORKER_SCAN_ROWS]);
    const now = r.rows[0] ? num(r.rows[0].now) : 0;
    return toWorkers(
      r.rows.map((w) => ({
        workerId: w.worker_id,
        queue: w.queue,
        jobs: num(w.jobs),
        low: num(w.low),
        high: num(w.high),
      })),
      now,
    );
  }

  async heartbeat(node: NodeHeartbeat): Promise<void> {
    const { nodeId, infoText } = resolveHeartbeat(node);
    this.ctx.guard();
    await this.ctx.exec.run(this.ctx.sql.admin.nodeHeartbeat, [nodeId, infoText]);
  }

  async nodes(): Promise<NodeInfo[]> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{ node_id: string; info: string; heartbeat_at: string; now: string }>(
      this.ctx.sql.admin.nodes,
      [NODE_SCAN_ROWS],
    );
    return r.rows.map((n) => toNode(n.node_id, n.info, num(n.heartbeat_at), num(n.now)));
  }

  async heldBy(workerId: string, limit = 200): Promise<JobInfo[]> {
    const worker = requireNonBlankString('workerId', workerId);
    const n = requireInt('limit', limit, 1, 1000);
    this.ctx.guard();
    const r = await this.ctx.exec.run<JobRow>(this.ctx.sql.admin.heldBy, [worker, WORKER_SCAN_ROWS, n]);
    return r.rows.map(toJobInfo);
  }

  async forgetNode(nodeId: string): Promise<boolean> {
    const id = requireNonBlankString('nodeId', nodeId);
    this.ctx.guard();
    return (await this.ctx.exec.run(this.ctx.sql.admin.forgetNode, [id])).rowCount > 0;
  }

  async receipts(outbox: string, opts?: ReceiptPageOpts): Promise<ReceiptPage> {
    this.ctx.guard();
    const q = resolveReceiptPage(outbox, opts);
    const r = await this.ctx.exec.run<{ message_id: string; receipt: string; delivered_at: string }>(
      this.ctx.sql.admin.receipts,
      [q.outbox, q.before?.[0] ?? null, q.before?.[1] ?? 0, q.limit + 1],
    );
    return receiptPage(
      q,
      r.rows.map((row) => ({
        messageId: num(row.message_id),
        receiptText: row.receipt,
        deliveredAt: num(row.delivered_at),
      })),
    );
  }

  auditLog(): Stream {
    this.ctx.guard();
    return new PostgresStream(this.ctx, AUDIT_STREAM);
  }

  async retryAllDead(queue: string): Promise<RedriveResult> {
    this.ctx.guard();
    const name = validateQueue(queue);
    // In batches through the queue's own redrive, which puts ordered jobs back behind their key's
    // head; paged by id, so jobs left dead by a conflict are not read again.
    let moved = 0;
    const conflictIds: number[] = [];
    let after = 0;
    for (;;) {
      const ids = (await this.ctx.exec.run<{ id: string }>(this.ctx.sql.admin.deadIds, [name, 10_000, after])).rows.map(
        (r) => num(r.id),
      );
      if (ids.length === 0) return { moved, conflicts: conflictIds.length, conflictIds };
      const r = redriveResult(
        await runWaking<RedriveRow>(
          this.ctx,
          this.ctx.sql.queue.retryDead,
          [name, ids],
          wakePayload(queueWakeChannel(name)),
          movedAny,
        ),
      );
      moved += r.moved;
      conflictIds.push(...r.conflictIds);
      after = ids[ids.length - 1]!;
    }
  }

  async purgeAllDead(queue: string): Promise<number> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{ n: string }>(this.ctx.sql.admin.purgeAllDead, [validateQueue(queue)]);
    return num(r.rows[0]?.n ?? 0);
  }

  async throughput(queue: string | null, sinceMs: number): Promise<ThroughputPoint[]> {
    this.ctx.guard();
    const name = queue === null ? null : validateQueue(queue);
    const since = resolveSince(sinceMs);
    await this.ctx.outcomes.flush();
    const r = await this.ctx.exec.run<Record<string, string>>(this.ctx.sql.admin.minutes, [since, name]);
    return r.rows.map((row) => ({
      queue: row.queue!,
      minute: num(row.minute),
      completed: num(row.completed),
      retried: num(row.retried),
      dead: num(row.dead),
      wait: {
        count: num(row.wait_n),
        sumMs: num(row.wait_ms),
        buckets: Array.from({ length: LATENCY_BUCKETS }, (_, i) => num(row[`w${i}`])),
      },
      run: {
        count: num(row.run_n),
        sumMs: num(row.run_ms),
        buckets: Array.from({ length: LATENCY_BUCKETS }, (_, i) => num(row[`r${i}`])),
      },
    }));
  }

  async streams(opts?: NamePageOpts): Promise<StreamInfo[]> {
    this.ctx.guard();
    const page = resolveNamePage(opts);
    const heads = await this.ctx.exec.run<{ stream: string; last_offset: string }>(this.ctx.sql.admin.streamHeads, [
      page.after,
      page.limit,
    ]);
    const names = heads.rows.map((h) => h.stream);
    const offsets =
      names.length === 0
        ? []
        : (
            await this.ctx.exec.run<{ stream: string; consumer: string; saved: string }>(
              this.ctx.sql.admin.streamOffsets,
              [names],
            )
          ).rows;
    return heads.rows.map((h) => {
      const head = num(h.last_offset);
      return {
        name: h.stream,
        headOffset: head,
        consumers: offsets
          .filter((o) => o.stream === h.stream)
          .map((o) => ({ consumer: o.consumer, offset: num(o.saved), lag: Math.max(0, head - num(o.saved)) })),
      };
    });
  }

  async lock(name: string): Promise<LockInfo | null> {
    this.ctx.guard();
    validateStoredName('lock', name);
    const r = await this.ctx.exec.run<{ owner: string; expires_at: string; now: string }>(this.ctx.sql.admin.lock, [
      name,
    ]);
    const row = r.rows[0];
    return row
      ? { name, owner: row.owner, expiresAt: num(row.expires_at), expired: num(row.expires_at) <= num(row.now) }
      : null;
  }

  listener(): ListenerState {
    return this.listenerState();
  }

  /** Adds buffered outcome counts to the current minute and prunes minutes past a day. */
  async writeOutcomes(rows: OutcomeRow[]): Promise<void> {
    const a = this.ctx.sql.admin;
    const hist = (pick: (r: OutcomeRow) => readonly number[]) =>
      Array.from({ length: LATENCY_BUCKETS }, (_, i) => rows.map((r) => pick(r)[i] ?? 0));
    await this.ctx.exec.run(a.addMinutes, [
      rows.map((r) => r.queue),
      rows.map((r) => r.completed),
      rows.map((r) => r.retried),
      rows.map((r) => r.dead),
      rows.map((r) => r.wait.count),
      rows.map((r) => r.wait.sumMs),
      rows.map((r) => r.run.count),
      rows.map((r) => r.run.sumMs),
      ...hist((r) => r.wait.buckets),
      ...hist((r) => r.run.buckets),
    ]);
    await this.ctx.exec.run(a.pruneMinutes, [THROUGHPUT_RETENTION_MS]);
  }

  private async now(): Promise<number> {
    return num((await this.ctx.exec.run<{ ms: string }>(this.ctx.sql.admin.now, [])).rows[0]!.ms);
  }

  private async nextPriority(queue: string, atMost: number): Promise<number | null> {
    const r = await this.ctx.exec.run<{ priority: number }>(this.ctx.sql.admin.nextPriority, [queue, atMost]);
    return r.rows[0]?.priority ?? null;
  }
}

/** A `job_attempts` row as `a_attempts` returns it (bigints as text). */
interface AttemptRow {
  attempt: number;
  worker_id: string | null;
  claimed_at: string | null;
  ended_at: string;
  outcome: JobAttempt['outcome'];
  error: string | null;
}
