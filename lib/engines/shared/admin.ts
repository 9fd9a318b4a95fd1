import {
  LATENCY_BUCKETS,
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
  type NodeHeartbeat,
  type NodeInfo,
} from '../../contract/admin.js';
import { requireWaitingIds, toFlowView } from '../../internal/admin-flows.js';
import {
  receiptPage,
  resolveJobEdit,
  resolveReceiptPage,
  toWorkers,
  type ReceiptRow,
  type ResolvedEdit,
  type ResolvedReceiptPage,
  type WorkerRow,
} from '../../internal/admin-extras.js';
import type { JobInfo, RedriveResult, Stream } from '../../contract/types.js';
import { requireInt, requireJobId, requireNonBlankString, validateStoredName } from '../../contract/validate.js';
import { resolveHeartbeat, toNode } from '../../internal/fleet.js';
import { resolveSearch, searchPage, type ResolvedSearch } from '../../internal/job-search.js';
import {
  encodeCursor,
  keyOf,
  validateQueue,
  resolveJobListQuery,
  resolveNamePage,
  resolveSince,
  type JobListQuery,
} from '../../internal/admin-paging.js';
import { num } from './rows.js';

// `StoreAdmin` for both engines: the arguments are checked, the pages cut and the rows mapped here;
// each engine reads and writes its rows through its `AdminStatements` (admin.ts of its folder).

/** What `toFlowView` takes: the edges below one flow job, its parents and its own wait. */
export interface FlowParts {
  edges: Parameters<typeof toFlowView>[0];
  parents: Parameters<typeof toFlowView>[1];
  wait: Parameters<typeof toFlowView>[2];
}

/** A `job_attempts` row's times as an engine reads them (int8 as text on PostgreSQL). */
export interface AttemptRow {
  attempt: number;
  worker_id: string | null;
  claimed_at: string | number | null;
  ended_at: string | number;
  outcome: JobAttempt['outcome'];
  error: string | null;
}

/** A job of the detail statement: the job, who holds it and whether a flow blocks it. */
export interface DetailRow {
  job: JobInfo;
  workerId: string | null;
  blocked: boolean;
}

/** A stream's head and its consumers' saved offsets. */
export interface StreamHead {
  name: string;
  head: number | string;
  consumers: { consumer: string; offset: number | string }[];
}

/** A node row: its id, info text, last heartbeat and the database clock. */
export interface NodeRow {
  nodeId: string;
  info: string;
  heartbeatAt: number | string;
  now: number | string;
}

/** The search statement's rows: the hits, how many rows it scanned and the lowest id it reached. */
export interface SearchRows {
  hits: JobInfo[];
  scanned: number | string;
  low: number | string | null;
}

/** What each engine gives {@link EngineAdmin}: its statements behind the admin API (admin.ts of its folder). */
export interface AdminStatements {
  /** Throws when the store is closed; called where each operation first checks. */
  guard(): void;
  readonly maxPayloadBytes: number;
  /** Up to `q.limit + 1` jobs of `queue` in the order of `q.state`, after its cursor. */
  jobRows(queue: string, q: JobListQuery): Promise<JobInfo[]>;
  searchRows(queue: string, q: ResolvedSearch): Promise<SearchRows>;
  detailRow(queue: string, id: number): Promise<DetailRow | undefined>;
  /** `queue.getJob(id)`: live, dead, or an outcome record. */
  jobWithOutcome(queue: string, id: number): Promise<JobInfo | null>;
  attemptRows(queue: string, id: number): Promise<readonly AttemptRow[]>;
  flowParts(job: number): Promise<FlowParts>;
  waitingRows(ids: number[]): Promise<readonly { job_id: number | string; pending: number }[]>;
  /** Edits a pending job (waking its queue when it is ready); false when it is not pending. */
  editPending(queue: string, id: number, e: ResolvedEdit): Promise<boolean>;
  workerRows(): Promise<{ rows: WorkerRow[]; now: number }>;
  writeHeartbeat(nodeId: string, infoText: string): Promise<void>;
  nodeRows(): Promise<NodeRow[]>;
  heldRows(worker: string, limit: number): Promise<JobInfo[]>;
  deleteNode(nodeId: string): Promise<boolean>;
  receiptRows(q: ResolvedReceiptPage): Promise<ReceiptRow[]>;
  redriveDead(queue: string): Promise<RedriveResult>;
  deleteDead(queue: string): Promise<number>;
  /** The per-minute rows since `since` (of `queue`, or of all with null), buffered counts flushed first. */
  minuteRows(since: number, queue: string | null): Promise<Record<string, unknown>[]>;
  streamHeads(page: { after: string | null; limit: number }): Promise<StreamHead[]>;
  lockRow(name: string): Promise<{ owner: string; expiresAt: number | string; now: number | string } | undefined>;
}

/** `StoreAdmin` on either engine: the checks, pages and mapping here, the statements the engine's {@link AdminStatements}. */
export abstract class EngineAdmin implements StoreAdmin {
  constructor(private readonly db: AdminStatements) {}

  abstract queueNames(): Promise<string[]>;
  abstract auditLog(): Stream;
  abstract listener(): ListenerState;

  async listJobs(queue: string, opts?: ListJobsOpts): Promise<JobPage> {
    this.db.guard();
    const name = validateQueue(queue);
    const q = resolveJobListQuery(opts);
    const rows = await this.db.jobRows(name, q);
    const jobs = rows.slice(0, q.limit);
    const last = jobs[jobs.length - 1];
    return { jobs, next: rows.length > q.limit && last ? encodeCursor(q.state, keyOf(q.state, last)) : null };
  }

  async searchJobs(queue: string, query?: JobSearch): Promise<JobSearchPage> {
    this.db.guard();
    const name = validateQueue(queue);
    const q = resolveSearch(query);
    const r = await this.db.searchRows(name, q);
    return searchPage(q, r.hits, num(r.scanned), r.low === null ? null : num(r.low));
  }

  async jobDetail(queue: string, id: number): Promise<JobDetail | null> {
    this.db.guard();
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    const row = await this.db.detailRow(name, jobId);
    // Progress, and the outcome record of a completed or cancelled job.
    const full = await this.db.jobWithOutcome(name, jobId);
    if (!row && !full) return null;
    const failedAttempts = (await this.db.attemptRows(name, jobId)).map((x) => ({
      attempt: x.attempt,
      workerId: x.worker_id,
      claimedAt: x.claimed_at === null ? null : num(x.claimed_at),
      endedAt: num(x.ended_at),
      outcome: x.outcome,
      error: x.error,
    }));
    if (!row) return { ...full!, workerId: null, blocked: false, failedAttempts };
    return {
      ...row.job,
      ...(full?.progress === undefined ? {} : { progress: full.progress }),
      workerId: row.workerId,
      blocked: row.blocked,
      failedAttempts,
    };
  }

  async flowOf(id: number): Promise<FlowView> {
    this.db.guard();
    const { edges, parents, wait } = await this.db.flowParts(requireJobId('id', id));
    return toFlowView(edges, parents, wait);
  }

  async waitingOn(ids: readonly number[]): Promise<Map<number, number>> {
    this.db.guard();
    const list = requireWaitingIds(ids);
    if (list.length === 0) return new Map();
    const rows = await this.db.waitingRows(list);
    return new Map(rows.map((x) => [num(x.job_id), num(x.pending)]));
  }

  async editJob(queue: string, id: number, edit: JobEdit): Promise<boolean> {
    this.db.guard();
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    return this.db.editPending(name, jobId, resolveJobEdit(edit, this.db.maxPayloadBytes));
  }

  async workers(): Promise<WorkerInfo[]> {
    this.db.guard();
    const { rows, now } = await this.db.workerRows();
    return toWorkers(rows, now);
  }

  async heartbeat(node: NodeHeartbeat): Promise<void> {
    const { nodeId, infoText } = resolveHeartbeat(node);
    this.db.guard();
    await this.db.writeHeartbeat(nodeId, infoText);
  }

  async nodes(): Promise<NodeInfo[]> {
    this.db.guard();
    const rows = await this.db.nodeRows();
    return rows.map((n) => toNode(n.nodeId, n.info, num(n.heartbeatAt), num(n.now)));
  }

  async heldBy(workerId: string, limit = 200): Promise<JobInfo[]> {
    const worker = requireNonBlankString('workerId', workerId);
    const n = requireInt('limit', limit, 1, 1000);
    this.db.guard();
    return this.db.heldRows(worker, n);
  }

  async forgetNode(nodeId: string): Promise<boolean> {
    const id = requireNonBlankString('nodeId', nodeId);
    this.db.guard();
    return this.db.deleteNode(id);
  }

  async receipts(outbox: string, opts?: ReceiptPageOpts): Promise<ReceiptPage> {
    this.db.guard();
    const q = resolveReceiptPage(outbox, opts);
    return receiptPage(q, await this.db.receiptRows(q));
  }

  async retryAllDead(queue: string): Promise<RedriveResult> {
    this.db.guard();
    return this.db.redriveDead(validateQueue(queue));
  }

  async purgeAllDead(queue: string): Promise<number> {
    this.db.guard();
    return this.db.deleteDead(validateQueue(queue));
  }

  async throughput(queue: string | null, sinceMs: number): Promise<ThroughputPoint[]> {
    this.db.guard();
    const name = queue === null ? null : validateQueue(queue);
    const since = resolveSince(sinceMs);
    const rows = await this.db.minuteRows(since, name);
    return rows.map((row) => ({
      queue: String(row.queue),
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
    this.db.guard();
    const heads = await this.db.streamHeads(resolveNamePage(opts));
    return heads.map((h) => {
      const head = num(h.head);
      return {
        name: h.name,
        headOffset: head,
        consumers: h.consumers.map((o) => ({
          consumer: o.consumer,
          offset: num(o.offset),
          lag: Math.max(0, head - num(o.offset)),
        })),
      };
    });
  }

  async lock(name: string): Promise<LockInfo | null> {
    this.db.guard();
    validateStoredName('lock', name);
    const row = await this.db.lockRow(name);
    if (!row) return null;
    const expiresAt = num(row.expiresAt);
    return { name, owner: row.owner, expiresAt, expired: expiresAt <= num(row.now) };
  }
}
