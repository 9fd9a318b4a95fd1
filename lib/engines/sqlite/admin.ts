import { getJobWithOutcome, type FullRow } from './outcomes.js';
import { fullJobInfo } from '../shared/outcomes.js';
import { LATENCY_BUCKETS, WORKER_SCAN_ROWS, FLOW_VIEW_EDGES, NODE_SCAN_ROWS } from '../../contract/admin.js';
import type { ListenerState } from '../../contract/admin.js';
import { AUDIT_STREAM, queueWakeChannel } from '../../contract/names.js';
import type { ReceiptRow, ResolvedEdit, ResolvedReceiptPage, WorkerRow } from '../../internal/admin-extras.js';
import type { JobInfo, RedriveResult, Stream } from '../../contract/types.js';
import type { ResolvedSearch } from '../../internal/job-search.js';
import { THROUGHPUT_RETENTION_MS, walkClaimOrderSync, type JobListQuery } from '../../internal/admin-paging.js';
import type { OutcomeRow } from '../../internal/outcome-counter.js';
import type { FlowEdgeRow } from '../../internal/admin-flows.js';
import { EngineAdmin, type AdminStatements, type AttemptRow } from '../shared/admin.js';
import * as A from './admin.sql.js';
import { JOB_DETAIL, SEARCH, SEARCH_DEAD, SEARCH_WITH_OUTCOMES } from './search.sql.js';
import { SqliteStream } from './stream.js';
import { retryDeadJobs } from './queue-ops.js';
import type { SqliteConn } from './connection.js';
import type { SqliteCore } from './context.js';
import { toJobInfo, type JobRow } from './rows.js';
import type { WriteCtx } from './writer.js';

const MIN_RUN_AT = -Number.MAX_SAFE_INTEGER;

/** `StoreAdmin` on SQLite: every list walks an index by keyset, every count is capped. */
export class SqliteAdmin extends EngineAdmin {
  readonly #assertOpen: () => void;

  constructor(
    private readonly core: SqliteCore,
    assertOpen: () => void,
  ) {
    super(new SqliteAdminStatements(core));
    this.#assertOpen = assertOpen;
  }

  queueNames(): Promise<string[]> {
    return this.core.read('admin.queueNames', (conn) => {
      const names = new Set<string>();
      for (const sql of [A.NEXT_PENDING_QUEUE, A.NEXT_PROCESSING_QUEUE, A.NEXT_DEAD_QUEUE]) {
        const next = conn.pluck(sql);
        let after = '';
        for (;;) {
          const q = next.get({ after }) as string | undefined;
          if (q === undefined) break;
          names.add(q);
          after = q;
        }
      }
      for (const q of conn.pluck(A.OTHER_QUEUES).all() as string[]) names.add(q);
      return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    });
  }

  auditLog(): Stream {
    this.#assertOpen();
    return new SqliteStream(this.core, AUDIT_STREAM);
  }

  listener(): ListenerState {
    return 'none';
  }
}

/** The statements behind {@link SqliteAdmin}. */
class SqliteAdminStatements implements AdminStatements {
  constructor(private readonly core: SqliteCore) {}

  /** Each read and write checks that the store is open. */
  guard(): void {}

  get maxPayloadBytes(): number {
    return this.core.maxPayloadBytes;
  }

  async jobRows(name: string, q: JobListQuery): Promise<JobInfo[]> {
    const rows = await this.core.read('admin.listJobs', (conn) => {
      if (q.state === 'pending' || q.state === 'scheduled') {
        const floor = q.state === 'scheduled' ? conn.now() : MIN_RUN_AT;
        return walkClaimOrderSync(
          q.after,
          q.limit + 1,
          floor,
          (atMost) => nextPriority(conn, name, atMost),
          (priority, runAt, id, limit) =>
            conn.stmt(A.PENDING_OF_PRIORITY).all({ queue: name, priority, runAt, id, limit }) as JobRow[],
        );
      }
      if (q.state === 'processing') {
        return conn
          .stmt(A.PROCESSING)
          .all({ queue: name, after: q.after?.[0] ?? null, id: q.after?.[1] ?? 0, limit: q.limit + 1 }) as JobRow[];
      }
      return conn
        .stmt(q.state === 'dead' ? A.DEAD : A.ALL)
        .all({ queue: name, after: q.after?.[0] ?? 0, limit: q.limit + 1 }) as JobRow[];
    });
    return rows.map(toJobInfo);
  }

  async searchRows(name: string, q: ResolvedSearch) {
    const rows = await this.core.read(
      'admin.searchJobs',
      (conn) =>
        // Dead jobs through the dead index; the history and `all` read the outcome records too; the live states only the jobs table.
        conn
          .stmt(
            q.rowState === 'dead'
              ? SEARCH_DEAD
              : q.rowState === 'finished' || q.rowState === null
                ? SEARCH_WITH_OUTCOMES
                : SEARCH,
          )
          .all({
            queue: name,
            before: q.before,
            state: q.rowState,
            budget: q.budget,
            future: q.futureOnly ? 1 : 0,
            now: conn.now(),
            id: q.id,
            uniqueKey: q.uniqueKey,
            orderingKey: q.orderingKey,
            from: q.enqueuedFrom,
            to: q.enqueuedTo,
            error: q.error,
            path: q.payloadPath === null ? null : `$.${q.payloadPath.join('.')}`,
            ptype: q.payloadType,
            ptext: q.payloadText,
            pnum: q.payloadNumber,
            // Header names are A-Za-z0-9_.- (checked): a quoted label, dots included, names one key.
            hpath: q.headerName === null ? null : `$."${q.headerName}"`,
            hvalue: q.headerValue,
            limit: q.limit + 1,
          }) as (FullRow & { scanned: number; low: number | null })[],
    );
    const first = rows[0];
    return {
      hits: rows.filter((row) => row.id !== null).map(fullJobInfo),
      scanned: first?.scanned ?? 0,
      low: first?.low ?? null,
    };
  }

  async detailRow(name: string, jobId: number) {
    const row = await this.core.read(
      'admin.jobDetail',
      (conn) =>
        conn.stmt(JOB_DETAIL).get({ queue: name, id: jobId }) as
          (JobRow & { worker_id: string | null; blocked: number }) | undefined,
    );
    return row && { job: toJobInfo(row), workerId: row.worker_id, blocked: row.blocked === 1 };
  }

  jobWithOutcome(name: string, jobId: number): Promise<JobInfo | null> {
    return getJobWithOutcome(this.core, name, jobId);
  }

  attemptRows(name: string, jobId: number) {
    return this.core.read(
      'admin.jobAttempts',
      (conn) => conn.stmt(A.ATTEMPTS).all({ queue: name, id: jobId }) as AttemptRow[],
    );
  }

  flowParts(job: number) {
    return this.core.read('admin.flowOf', (conn) => ({
      edges: conn.stmt(A.FLOW_EDGES).all({ job, limit: FLOW_VIEW_EDGES + 1 }) as FlowEdgeRow[],
      parents: conn.stmt(A.FLOW_PARENTS).all({ job }) as { id: number; queue: string }[],
      wait: conn.stmt(A.FLOW_WAIT).get({ job }) as { pending: number; policy: string } | undefined,
    }));
  }

  waitingRows(list: number[]): Promise<{ job_id: number; pending: number }[]> {
    return this.core.read(
      'admin.waitingOn',
      (conn) => conn.stmt(A.WAITING_ON).all({ ids: JSON.stringify(list) }) as { job_id: number; pending: number }[],
    );
  }

  editPending(name: string, jobId: number, e: ResolvedEdit): Promise<boolean> {
    return this.core.write('admin.editJob', (ctx) => {
      const row = ctx.conn
        .stmt(A.EDIT_PENDING)
        .get({ queue: name, id: jobId, payload: e.payloadText, priority: e.priority, runAt: e.runAt }) as
        { blocked: number } | undefined;
      if (row && row.blocked === 0) ctx.wake(queueWakeChannel(name));
      return row !== undefined;
    });
  }

  workerRows(): Promise<{ rows: WorkerRow[]; now: number }> {
    return this.core.read('admin.workers', (conn) => ({
      rows: conn.stmt(A.WORKERS).all({ limit: WORKER_SCAN_ROWS }) as WorkerRow[],
      now: conn.now(),
    }));
  }

  async writeHeartbeat(nodeId: string, infoText: string): Promise<void> {
    await this.core.write('admin.heartbeat', (ctx) => {
      ctx.conn.stmt(A.NODE_HEARTBEAT).run({ nodeId, info: infoText, now: ctx.now });
    });
  }

  nodeRows() {
    return this.core.read('admin.nodes', (conn) => {
      const now = conn.now();
      const rows = conn.stmt(A.NODES).all({ limit: NODE_SCAN_ROWS }) as {
        nodeId: string;
        info: string;
        heartbeatAt: number;
      }[];
      return rows.map((r) => ({ ...r, now }));
    });
  }

  heldRows(worker: string, n: number): Promise<JobInfo[]> {
    return this.core.read('admin.heldBy', (conn) =>
      (conn.stmt(A.HELD_BY).all({ worker, scan: WORKER_SCAN_ROWS, limit: n }) as JobRow[]).map(toJobInfo),
    );
  }

  deleteNode(id: string): Promise<boolean> {
    return this.core.write('admin.forgetNode', (ctx) => ctx.conn.stmt(A.FORGET_NODE).run(id).changes > 0);
  }

  receiptRows(q: ResolvedReceiptPage): Promise<ReceiptRow[]> {
    return this.core.read(
      'admin.receipts',
      (conn) =>
        conn.stmt(A.RECEIPTS).all({
          outbox: q.outbox,
          at: q.before?.[0] ?? null,
          id: q.before?.[1] ?? 0,
          limit: q.limit + 1,
        }) as ReceiptRow[],
    );
  }

  redriveDead(name: string): Promise<RedriveResult> {
    // Through the queue's own redrive, which puts ordered jobs back behind their key's head.
    return this.core.write('admin.retryAllDead', (ctx) =>
      retryDeadJobs(ctx, name, ctx.conn.pluck(A.DEAD_IDS).all({ queue: name }) as number[]),
    );
  }

  deleteDead(name: string): Promise<number> {
    return this.core.write('admin.purgeAllDead', (ctx) => ctx.conn.stmt(A.PURGE_ALL_DEAD).run({ queue: name }).changes);
  }

  async minuteRows(since: number, name: string | null): Promise<Record<string, unknown>[]> {
    await this.core.outcomes.flush();
    return this.core.read(
      'admin.throughput',
      (conn) => conn.stmt(A.MINUTES).all({ since, queue: name }) as Record<string, unknown>[],
    );
  }

  streamHeads(page: { after: string | null; limit: number }) {
    return this.core.read('admin.streams', (conn) =>
      (
        conn.stmt(A.STREAM_HEADS).all({ after: page.after, limit: page.limit }) as {
          stream: string;
          last_seq: number;
        }[]
      ).map((h) => ({
        name: h.stream,
        head: h.last_seq,
        consumers: (conn.stmt(A.STREAM_OFFSETS).all(h.stream) as { consumer: string; seq: number }[]).map((o) => ({
          consumer: o.consumer,
          offset: o.seq,
        })),
      })),
    );
  }

  lockRow(name: string): Promise<{ owner: string; expiresAt: number; now: number } | undefined> {
    return this.core.read('admin.lock', (conn) => {
      const row = conn.stmt(A.LOCK).get(name) as { owner: string; expires_at: number } | undefined;
      return row && { owner: row.owner, expiresAt: row.expires_at, now: conn.now() };
    });
  }
}

/** Adds buffered outcome counts to the current minute and prunes minutes past a day (inside one write). */
export function writeOutcomes(ctx: WriteCtx, rows: readonly OutcomeRow[]): void {
  const add = ctx.conn.stmt(A.ADD_MINUTE);
  const lat = ctx.conn.stmt(A.ADD_LATENCY);
  const minute = Math.floor(ctx.now / 60_000) * 60_000;
  for (const r of rows) {
    add.run({ queue: r.queue, minute, completed: r.completed, retried: r.retried, dead: r.dead });
    if (r.wait.count === 0 && r.run.count === 0) continue;
    const hist: Record<string, number> = {};
    for (let i = 0; i < LATENCY_BUCKETS; i++) {
      hist[`w${i}`] = r.wait.buckets[i] ?? 0;
      hist[`r${i}`] = r.run.buckets[i] ?? 0;
    }
    lat.run({
      queue: r.queue,
      minute,
      waitN: r.wait.count,
      waitMs: r.wait.sumMs,
      runN: r.run.count,
      runMs: r.run.sumMs,
      ...hist,
    });
  }
  ctx.conn.stmt(A.PRUNE_MINUTES).run({ now: ctx.now, retention: THROUGHPUT_RETENTION_MS });
  ctx.conn.stmt(A.PRUNE_LATENCY).run({ now: ctx.now, retention: THROUGHPUT_RETENTION_MS });
}

function nextPriority(conn: SqliteConn, queue: string, atMost: number): number | null {
  const p = conn.pluck(A.NEXT_PRIORITY).get({ queue, atMost }) as number | undefined;
  return p ?? null;
}
