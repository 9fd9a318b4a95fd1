import { getJobWithOutcome, type FullRow } from './outcomes.js';
import { fullJobInfo } from '../shared/outcomes.js';
import { LATENCY_BUCKETS, WORKER_SCAN_ROWS, FLOW_VIEW_EDGES, NODE_SCAN_ROWS } from '../../contract/admin.js';
import type { ListenerState } from '../../contract/admin.js';
import type { FlowEdgeRow } from '../../internal/admin-flows.js';
import type { ReceiptRow, ResolvedEdit, ResolvedReceiptPage, WorkerRow } from '../../internal/admin-extras.js';
import { AUDIT_STREAM, queueWakeChannel } from '../../contract/names.js';
import type { JobInfo, RedriveResult, Stream } from '../../contract/types.js';
import type { ResolvedSearch } from '../../internal/job-search.js';
import { THROUGHPUT_RETENTION_MS, walkClaimOrder, type JobListQuery } from '../../internal/admin-paging.js';
import type { OutcomeRow } from '../../internal/outcome-counter.js';
import { EngineAdmin, type AdminStatements, type AttemptRow } from '../shared/admin.js';
import { moved as movedAny, redriveResult, runWaking, type PgContext, type RedriveRow } from './context.js';
import { num } from './connection.js';
import { toJobInfo } from './postgres-driver.js';
import { PostgresStream } from './stream.js';
import type { JobRow } from './queue.sql.js';
import { wakePayload } from './schema-sql.js';

const MIN_RUN_AT = -Number.MAX_SAFE_INTEGER;

/** `StoreAdmin` on PostgreSQL: every list walks an index by keyset, every count is capped. */
export class PostgresAdmin extends EngineAdmin {
  constructor(
    private readonly ctx: PgContext,
    private readonly listenerState: () => ListenerState,
  ) {
    super(new PgAdminStatements(ctx));
  }

  async queueNames(): Promise<string[]> {
    this.ctx.guard();
    const r = await this.ctx.exec.run<{ q: string }>(this.ctx.sql.admin.queueNames, []);
    return r.rows.map((row) => row.q);
  }

  auditLog(): Stream {
    this.ctx.guard();
    return new PostgresStream(this.ctx, AUDIT_STREAM);
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
}

/** The statements behind {@link PostgresAdmin}. */
class PgAdminStatements implements AdminStatements {
  constructor(private readonly ctx: PgContext) {}

  guard(): void {
    this.ctx.guard();
  }

  get maxPayloadBytes(): number {
    return this.ctx.maxPayloadBytes;
  }

  async jobRows(name: string, q: JobListQuery): Promise<JobInfo[]> {
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
    return rows.map(toJobInfo);
  }

  async searchRows(name: string, q: ResolvedSearch) {
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
    return {
      hits: r.rows.filter((row) => row.id !== null).map(fullJobInfo),
      scanned: first?.scanned ?? 0,
      low: first?.low ?? null,
    };
  }

  async detailRow(name: string, jobId: number) {
    const r = await this.ctx.exec.run<JobRow & { worker_id: string | null; blocked: boolean }>(
      this.ctx.sql.search.detail,
      [name, jobId],
    );
    const row = r.rows[0];
    return row && { job: toJobInfo(row), workerId: row.worker_id, blocked: row.blocked };
  }

  jobWithOutcome(name: string, jobId: number): Promise<JobInfo | null> {
    return getJobWithOutcome(this.ctx, name, jobId);
  }

  async attemptRows(name: string, jobId: number): Promise<AttemptRow[]> {
    return (await this.ctx.exec.run<AttemptRow>(this.ctx.sql.admin.attempts, [name, jobId])).rows;
  }

  async flowParts(job: number) {
    const a = this.ctx.sql.admin;
    const [edges, parents, wait] = await Promise.all([
      this.ctx.exec.run<FlowEdgeRow>(a.flowEdges, [job, FLOW_VIEW_EDGES + 1]),
      this.ctx.exec.run<{ id: string; queue: string }>(a.flowParents, [job]),
      this.ctx.exec.run<{ pending: number; policy: string }>(a.flowWait, [job]),
    ]);
    return { edges: edges.rows, parents: parents.rows, wait: wait.rows[0] };
  }

  async waitingRows(list: number[]): Promise<{ job_id: string; pending: number }[]> {
    return (await this.ctx.exec.run<{ job_id: string; pending: number }>(this.ctx.sql.admin.waitingOn, [list])).rows;
  }

  async editPending(name: string, jobId: number, e: ResolvedEdit): Promise<boolean> {
    const r = await runWaking<{ n: string; woke: string | null }>(
      this.ctx,
      this.ctx.sql.admin.editPending,
      [name, jobId, e.payloadText, e.priority, e.runAt],
      wakePayload(queueWakeChannel(name)),
      (x) => x.rows[0]?.woke !== null && x.rows[0]?.woke !== undefined,
    );
    return num(r.rows[0]?.n ?? 0) > 0;
  }

  async workerRows(): Promise<{ rows: WorkerRow[]; now: number }> {
    const r = await this.ctx.exec.run<{
      worker_id: string;
      queue: string;
      jobs: string;
      low: string;
      high: string;
      now: string;
    }>(this.ctx.sql.admin.workers, [WORKER_SCAN_ROWS]);
    return {
      rows: r.rows.map((w) => ({
        workerId: w.worker_id,
        queue: w.queue,
        jobs: num(w.jobs),
        low: num(w.low),
        high: num(w.high),
      })),
      now: r.rows[0] ? num(r.rows[0].now) : 0,
    };
  }

  async writeHeartbeat(nodeId: string, infoText: string): Promise<void> {
    await this.ctx.exec.run(this.ctx.sql.admin.nodeHeartbeat, [nodeId, infoText]);
  }

  async nodeRows() {
    const r = await this.ctx.exec.run<{ node_id: string; info: string; heartbeat_at: string; now: string }>(
      this.ctx.sql.admin.nodes,
      [NODE_SCAN_ROWS],
    );
    return r.rows.map((n) => ({ nodeId: n.node_id, info: n.info, heartbeatAt: n.heartbeat_at, now: n.now }));
  }

  async heldRows(worker: string, n: number): Promise<JobInfo[]> {
    const r = await this.ctx.exec.run<JobRow>(this.ctx.sql.admin.heldBy, [worker, WORKER_SCAN_ROWS, n]);
    return r.rows.map(toJobInfo);
  }

  async deleteNode(id: string): Promise<boolean> {
    return (await this.ctx.exec.run(this.ctx.sql.admin.forgetNode, [id])).rowCount > 0;
  }

  async receiptRows(q: ResolvedReceiptPage): Promise<ReceiptRow[]> {
    const r = await this.ctx.exec.run<{ message_id: string; receipt: string; delivered_at: string }>(
      this.ctx.sql.admin.receipts,
      [q.outbox, q.before?.[0] ?? null, q.before?.[1] ?? 0, q.limit + 1],
    );
    return r.rows.map((row) => ({
      messageId: num(row.message_id),
      receiptText: row.receipt,
      deliveredAt: num(row.delivered_at),
    }));
  }

  async redriveDead(name: string): Promise<RedriveResult> {
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

  async deleteDead(name: string): Promise<number> {
    const r = await this.ctx.exec.run<{ n: string }>(this.ctx.sql.admin.purgeAllDead, [name]);
    return num(r.rows[0]?.n ?? 0);
  }

  async minuteRows(since: number, name: string | null): Promise<Record<string, string>[]> {
    await this.ctx.outcomes.flush();
    return (await this.ctx.exec.run<Record<string, string>>(this.ctx.sql.admin.minutes, [since, name])).rows;
  }

  async streamHeads(page: { after: string | null; limit: number }) {
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
    return heads.rows.map((h) => ({
      name: h.stream,
      head: h.last_offset,
      consumers: offsets.filter((o) => o.stream === h.stream).map((o) => ({ consumer: o.consumer, offset: o.saved })),
    }));
  }

  async lockRow(name: string): Promise<{ owner: string; expiresAt: string; now: string } | undefined> {
    const r = await this.ctx.exec.run<{ owner: string; expires_at: string; now: string }>(this.ctx.sql.admin.lock, [
      name,
    ]);
    const row = r.rows[0];
    return row && { owner: row.owner, expiresAt: row.expires_at, now: row.now };
  }

  private async now(): Promise<number> {
    return num((await this.ctx.exec.run<{ ms: string }>(this.ctx.sql.admin.now, [])).rows[0]!.ms);
  }

  private async nextPriority(queue: string, atMost: number): Promise<number | null> {
    const r = await this.ctx.exec.run<{ priority: number }>(this.ctx.sql.admin.nextPriority, [queue, atMost]);
    return r.rows[0]?.priority ?? null;
  }
}
