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
import { queueWakeChannel } from '../../contract/names.js';
import {
  receiptPage,
  resolveJobEdit,
  resolveReceiptPage,
  toWorkers,
  type ReceiptRow,
  type WorkerRow,
} from '../../internal/admin-extras.js';
import { AUDIT_STREAM } from '../../contract/names.js';
import type { JobInfo, RedriveResult, Stream } from '../../contract/types.js';
import { requireInt, requireJobId, requireNonBlankString, validateStoredName } from '../../contract/validate.js';
import { resolveHeartbeat, toNode } from '../../internal/fleet.js';
import { resolveSearch, searchPage } from '../../internal/job-search.js';
import {
  encodeCursor,
  keyOf,
  resolveJobListQuery,
  resolveNamePage,
  resolveSince,
  THROUGHPUT_RETENTION_MS,
  validateQueue,
  walkClaimOrderSync,
} from '../../internal/admin-paging.js';
import type { OutcomeRow } from '../../internal/outcome-counter.js';
import * as A from './admin.sql.js';
import { requireWaitingIds, toFlowView, type FlowEdgeRow } from '../../internal/admin-flows.js';
import { JOB_DETAIL, SEARCH, SEARCH_DEAD, SEARCH_WITH_OUTCOMES } from './search.sql.js';
import { SqliteStream } from './stream.js';
import { retryDeadJobs } from './queue-ops.js';
import type { SqliteConn } from './connection.js';
import type { SqliteCore } from './context.js';
import { toJobInfo, type JobRow } from './rows.js';
import type { WriteCtx } from './writer.js';

const MIN_RUN_AT = -Number.MAX_SAFE_INTEGER;

/** `StoreAdmin` on SQLite: every list walks an index by keyset, every count is capped. */
export class SqliteAdmin implements StoreAdmin {
  readonly #assertOpen: () => void;

  constructor(
    private readonly core: SqliteCore,
    assertOpen: () => void,
  ) {
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

  async listJobs(queue: string, opts?: ListJobsOpts): Promise<JobPage> {
    const name = validateQueue(queue);
    const q = resolveJobListQuery(opts);
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
    const jobs = rows.slice(0, q.limit).map(toJobInfo);
    const last = jobs[jobs.length - 1];
    return { jobs, next: rows.length > q.limit && last ? encodeCursor(q.state, keyOf(q.state, last)) : null };
  }

  async searchJobs(queue: string, query?: JobSearch): Promise<JobSearchPage> {
    const name = validateQueue(queue);
    const q = resolveSearch(query);
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
    const hits = rows.filter((row) => row.id !== null).map((row) => ({ ...toJobInfo(row), ...outcomeExtras(row) }));
    return searchPage(q, hits, first?.scanned ?? 0, first?.low ?? null);
  }

  async jobDetail(queue: string, id: number): Promise<JobDetail | null> {
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    const row = await this.core.read(
      'admin.jobDetail',
      (conn) =>
        conn.stmt(JOB_DETAIL).get({ queue: name, id: jobId }) as
          (JobRow & { worker_id: string | null; blocked: number }) | undefined,
    );
    // Progress, and the outcome record of a completed or cancelled job.
    const full = await getJobWithOutcome(this.core, name, jobId);
    if (!row && !full) return null;
    const failedAttempts = await this.core.read(
      'admin.jobAttempts',
      (conn) => conn.stmt(A.ATTEMPTS).all({ queue: name, id: jobId }) as JobAttempt[],
    );
    if (!row) return { ...full!, workerId: null, blocked: false, failedAttempts };
    return {
      ...toJobInfo(row),
      ...(full?.progress === undefined ? {} : { progress: full.progress }),
      workerId: row.worker_id,
      blocked: row.blocked === 1,
      failedAttempts,
    };
  }

  async flowOf(id: number): Promise<FlowView> {
    const job = requireJobId('id', id);
    return this.core.read('admin.flowOf', (conn) =>
      toFlowView(
        conn.stmt(A.FLOW_EDGES).all({ job, limit: FLOW_VIEW_EDGES + 1 }) as FlowEdgeRow[],
        conn.stmt(A.FLOW_PARENTS).all({ job }) as { id: number; queue: string }[],
        conn.stmt(A.FLOW_WAIT).get({ job }) as { pending: number; policy: string } | undefined,
      ),
    );
  }

  async waitingOn(ids: readonly number[]): Promise<Map<number, number>> {
    const list = requireWaitingIds(ids);
    if (list.length === 0) return new Map();
    const rows = await this.core.read(
      'admin.waitingOn',
      (conn) => conn.stmt(A.WAITING_ON).all({ ids: JSON.stringify(list) }) as { job_id: number; pending: number }[],
    );
    return new Map(rows.map((r) => [Number(r.job_id), Number(r.pending)]));
  }

  async editJob(queue: string, id: number, edit: JobEdit): Promise<boolean> {
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    const e = resolveJobEdit(edit, this.core.maxPayloadBytes);
    return this.core.write('admin.editJob', (ctx) => {
      const row = ctx.conn
        .stmt(A.EDIT_PENDING)
        .get({ queue: name, id: jobId, payload: e.payloadText, priority: e.priority, runAt: e.runAt }) as
        { blocked: number } | undefined;
      if (row && row.blocked === 0) ctx.wake(queueWakeChannel(name));
      return row !== undefined;
    });
  }

  async workers(): Promise<WorkerInfo[]> {
    return this.core.read('admin.workers', (conn) =>
      toWorkers(conn.stmt(A.WORKERS).all({ limit: WORKER_SCAN_ROWS }) as WorkerRow[], conn.now()),
    );
  }

  async heartbeat(node: NodeHeartbeat): Promise<void> {
    const { nodeId, infoText } = resolveHeartbeat(node);
    await this.core.write('admin.heartbeat', (ctx) => {
      ctx.conn.stmt(A.NODE_HEARTBEAT).run({ nodeId, info: infoText, now: ctx.now });
    });
  }

  async nodes(): Promise<NodeInfo[]> {
    return this.core.read('admin.nodes', (conn) => {
      const now = conn.now();
      const rows = conn.stmt(A.NODES).all({ limit: NODE_SCAN_ROWS }) as {
        nodeId: string;
        info: string;
        heartbeatAt: number;
      }[];
      return rows.map((r) => toNode(r.nodeId, r.info, Number(r.heartbeatAt), now));
    });
  }

  async heldBy(workerId: string, limit = 200): Promise<JobInfo[]> {
    const worker = requireNonBlankString('workerId', workerId);
    const n = requireInt('limit', limit, 1, 1000);
    return this.core.read('admin.heldBy', (conn) =>
      (conn.stmt(A.HELD_BY).all({ worker, scan: WORKER_SCAN_ROWS, limit: n }) as JobRow[]).map(toJobInfo),
    );
  }

  async forgetNode(nodeId: string): Promise<boolean> {
    const id = requireNonBlankString('nodeId', nodeId);
    return this.core.write('admin.forgetNode', (ctx) => ctx.conn.stmt(A.FORGET_NODE).run(id).changes > 0);
  }

  async receipts(outbox: string, opts?: ReceiptPageOpts): Promise<ReceiptPage> {
    const q = resolveReceiptPage(outbox, opts);
    const rows = await this.core.read(
      'admin.receipts',
      (conn) =>
        conn.stmt(A.RECEIPTS).all({
          outbox: q.outbox,
          at: q.before?.[0] ?? null,
          id: q.before?.[1] ?? 0,
          limit: q.limit + 1,
        }) as ReceiptRow[],
    );
    return receiptPage(q, rows);
  }

  auditLog(): Stream {
    this.#assertOpen();
    return new SqliteStream(this.core, AUDIT_STREAM);
  }

  async retryAllDead(queue: string): Promise<RedriveResult> {
    const name = validateQueue(queue);
    // Through the queue's own redrive, which puts ordered jobs back behind their key's head.
    return this.core.write('admin.retryAllDead', (ctx) =>
      retryDeadJobs(ctx, name, ctx.conn.pluck(A.DEAD_IDS).all({ queue: name }) as number[]),
    );
  }

  async purgeAllDead(queue: string): Promise<number> {
    const name = validateQueue(queue);
    return this.core.write('admin.purgeAllDead', (ctx) => ctx.conn.stmt(A.PURGE_ALL_DEAD).run({ queue: name }).changes);
  }

  async throughput(queue: string | null, sinceMs: number): Promise<ThroughputPoint[]> {
    const name = queue === null ? null : validateQueue(queue);
    const since = resolveSince(sinceMs);
    await this.core.outcomes.flush();
    return this.core.read('admin.throughput', (conn) =>
      (conn.stmt(A.MINUTES).all({ since, queue: name }) as Record<string, number | string>[]).map((row) => ({
        queue: String(row.queue),
        minute: Number(row.minute),
        completed: Number(row.completed),
        retried: Number(row.retried),
        dead: Number(row.dead),
        wait: {
          count: Number(row.wait_n),
          sumMs: Number(row.wait_ms),
          buckets: Array.from({ length: LATENCY_BUCKETS }, (_, i) => Number(row[`w${i}`])),
        },
        run: {
          count: Number(row.run_n),
          sumMs: Number(row.run_ms),
          buckets: Array.from({ length: LATENCY_BUCKETS }, (_, i) => Number(row[`r${i}`])),
        },
      })),
    );
  }

  async streams(opts?: NamePageOpts): Promise<StreamInfo[]> {
    const page = resolveNamePage(opts);
    return this.core.read('admin.streams', (conn) => {
      const heads = conn.stmt(A.STREAM_HEADS).all({ after: page.after, limit: page.limit }) as {
        stream: string;
        last_seq: number;
      }[];
      return heads.map((h) => ({
        name: h.stream,
        headOffset: h.last_seq,
        consumers: (conn.stmt(A.STREAM_OFFSETS).all(h.stream) as { consumer: string; seq: number }[]).map((o) => ({
          consumer: o.consumer,
          offset: o.seq,
          lag: Math.max(0, h.last_seq - o.seq),
        })),
      }));
    });
  }

  async lock(name: string): Promise<LockInfo | null> {
    validateStoredName('lock', name);
    return this.core.read('admin.lock', (conn) => {
      const row = conn.stmt(A.LOCK).get(name) as { owner: string; expires_at: number } | undefined;
      return row ? { name, owner: row.owner, expiresAt: row.expires_at, expired: row.expires_at <= conn.now() } : null;
    });
  }

  listener(): ListenerState {
    return 'none';
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
