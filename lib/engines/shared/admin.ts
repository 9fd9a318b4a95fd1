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
// each engine reads and writes its rows through the hooks below (admin.ts of its folder).

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

export abstract class EngineAdmin implements StoreAdmin {
  /** Throws when the store is closed; called where each operation first checks. */
  protected abstract guard(): void;
  protected abstract readonly maxPayloadBytes: number;

  abstract queueNames(): Promise<string[]>;
  abstract auditLog(): Stream;
  abstract listener(): ListenerState;

  /** Up to `q.limit + 1` jobs of `queue` in the order of `q.state`, after its cursor. */
  protected abstract jobRows(queue: string, q: JobListQuery): Promise<JobInfo[]>;
  protected abstract searchRows(queue: string, q: ResolvedSearch): Promise<SearchRows>;
  protected abstract detailRow(queue: string, id: number): Promise<DetailRow | undefined>;
  /** `queue.getJob(id)`: live, dead, or an outcome record. */
  protected abstract jobWithOutcome(queue: string, id: number): Promise<JobInfo | null>;
  protected abstract attemptRows(queue: string, id: number): Promise<readonly AttemptRow[]>;
  protected abstract flowParts(job: number): Promise<FlowParts>;
  protected abstract waitingRows(ids: number[]): Promise<readonly { job_id: number | string; pending: number }[]>;
  /** Edits a pending job (waking its queue when it is ready); false when it is not pending. */
  protected abstract editPending(queue: string, id: number, e: ResolvedEdit): Promise<boolean>;
  protected abstract workerRows(): Promise<{ rows: WorkerRow[]; now: number }>;
  protected abstract writeHeartbeat(nodeId: string, infoText: string): Promise<void>;
  protected abstract nodeRows(): Promise<NodeRow[]>;
  protected abstract heldRows(worker: string, limit: number): Promise<JobInfo[]>;
  protected abstract deleteNode(nodeId: string): Promise<boolean>;
  protected abstract receiptRows(q: ResolvedReceiptPage): Promise<ReceiptRow[]>;
  protected abstract redriveDead(queue: string): Promise<RedriveResult>;
  protected abstract deleteDead(queue: string): Promise<number>;
  /** The per-minute rows since `since` (of `queue`, or of all with null), buffered counts flushed first. */
  protected abstract minuteRows(since: number, queue: string | null): Promise<Record<string, unknown>[]>;
  protected abstract streamHeads(page: { after: string | null; limit: number }): Promise<StreamHead[]>;
  protected abstract lockRow(
    name: string,
  ): Promise<{ owner: string; expiresAt: number | string; now: number | string } | undefined>;

  async listJobs(queue: string, opts?: ListJobsOpts): Promise<JobPage> {
    this.guard();
    const name = validateQueue(queue);
    const q = resolveJobListQuery(opts);
    const rows = await this.jobRows(name, q);
    const jobs = rows.slice(0, q.limit);
    const last = jobs[jobs.length - 1];
    return { jobs, next: rows.length > q.limit && last ? encodeCursor(q.state, keyOf(q.state, last)) : null };
  }

  async searchJobs(queue: string, query?: JobSearch): Promise<JobSearchPage> {
    this.guard();
    const name = validateQueue(queue);
    const q = resolveSearch(query);
    const r = await this.searchRows(name, q);
    return searchPage(q, r.hits, num(r.scanned), r.low === null ? null : num(r.low));
  }

  async jobDetail(queue: string, id: number): Promise<JobDetail | null> {
    this.guard();
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    const row = await this.detailRow(name, jobId);
    // Progress, and the outcome record of a completed or cancelled job.
    const full = await this.jobWithOutcome(name, jobId);
    if (!row && !full) return null;
    const failedAttempts = (await this.attemptRows(name, jobId)).map((x) => ({
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
    this.guard();
    const { edges, parents, wait } = await this.flowParts(requireJobId('id', id));
    return toFlowView(edges, parents, wait);
  }

  async waitingOn(ids: readonly number[]): Promise<Map<number, number>> {
    this.guard();
    const list = requireWaitingIds(ids);
    if (list.length === 0) return new Map();
    const rows = await this.waitingRows(list);
    return new Map(rows.map((x) => [num(x.job_id), num(x.pending)]));
  }

  async editJob(queue: string, id: number, edit: JobEdit): Promise<boolean> {
    this.guard();
    const name = validateQueue(queue);
    const jobId = requireJobId('id', id);
    return this.editPending(name, jobId, resolveJobEdit(edit, this.maxPayloadBytes));
  }

  async workers(): Promise<WorkerInfo[]> {
    this.guard();
    const { rows, now } = await this.workerRows();
    return toWorkers(rows, now);
  }

  async heartbeat(node: NodeHeartbeat): Promise<void> {
    const { nodeId, infoText } = resolveHeartbeat(node);
    this.guard();
    await this.writeHeartbeat(nodeId, infoText);
  }

  async nodes(): Promise<NodeInfo[]> {
    this.guard();
    const rows = await this.nodeRows();
    return rows.map((n) => toNode(n.nodeId, n.info, num(n.heartbeatAt), num(n.now)));
  }

  async heldBy(workerId: string, limit = 200): Promise<JobInfo[]> {
    const worker = requireNonBlankString('workerId', workerId);
    const n = requireInt('limit', limit, 1, 1000);
    this.guard();
    return this.heldRows(worker, n);
  }

  async forgetNode(nodeId: string): Promise<boolean> {
    const id = requireNonBlankString('nodeId', nodeId);
    this.guard();
    return this.deleteNode(id);
  }

  async receipts(outbox: string, opts?: ReceiptPageOpts): Promise<ReceiptPage> {
    this.guard();
    const q = resolveReceiptPage(outbox, opts);
    return receiptPage(q, await this.receiptRows(q));
  }

  async retryAllDead(queue: string): Promise<RedriveResult> {
    this.guard();
    return this.redriveDead(validateQueue(queue));
  }

  async purgeAllDead(queue: string): Promise<number> {
    this.guard();
    return this.deleteDead(validateQueue(queue));
  }

  async throughput(queue: string | null, sinceMs: number): Promise<ThroughputPoint[]> {
    this.guard();
    const name = queue === null ? null : validateQueue(queue);
    const since = resolveSince(sinceMs);
    const rows = await this.minuteRows(since, name);
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
    this.guard();
    const heads = await this.streamHeads(resolveNamePage(opts));
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
    this.guard();
    validateStoredName('lock', name);
    const row = await this.lockRow(name);
    if (!row) return null;
    const expiresAt = num(row.expiresAt);
    return { name, owner: row.owner, expiresAt, expired: expiresAt <= num(row.now) };
  }
}
