import type { ChildPolicy } from './flows.js';
import type { JobInfo, RedriveResult, StoredReceipt, Stream } from './types.js';

/**
 * Which jobs `listJobs` pages through. `pending` is the claimable-order pending
 * jobs, `scheduled` those whose run time is still in the future. Jobs waiting
 * behind an older job of their ordering key are listed under `all` only.
 */
export type JobListState = 'pending' | 'scheduled' | 'processing' | 'dead' | 'all';

/** Options of {@link StoreAdmin.listJobs}. */
export interface ListJobsOpts {
  /** Default `all`. */
  state?: JobListState;
  /** The `next` cursor of the previous page (opaque). Absent: the first page. */
  cursor?: string;
  /** Page size, 1..1000, default 50. */
  limit?: number;
}

/**
 * One page of jobs. Paged by keyset (never OFFSET): each state walks its own
 * index, so a page costs the same at any depth.
 * Order: pending and scheduled in claim order (priority desc, run time, id);
 * processing by claim deadline; dead and all by id.
 */
export interface JobPage {
  readonly jobs: JobInfo[];
  /** Cursor of the next page, `null` on the last one. */
  readonly next: string | null;
}

/** A JSON scalar a payload field is compared with. */
export type JsonScalar = string | number | boolean | null;

/**
 * What {@link StoreAdmin.searchJobs} matches. Every field narrows the result
 * (AND); an absent field matches everything.
 */
export interface JobSearch {
  /**
   * Default `all`. `pending` includes scheduled jobs; `scheduled` is pending with a run time in the
   * future (database clock); `finished` is every job past the live states, the job history: dead jobs,
   * and the outcome records of completed and cancelled jobs (kept per the queue's `resultRetentionMs`),
   * with their `result`, `progress` and `finishedAt`. `all` reads the outcome records too.
   */
  state?: JobSearchState;
  /** Exactly this job id. */
  id?: number;
  /** Jobs carrying this `uniqueKey` (any state). */
  uniqueKey?: string;
  /** Jobs carrying this `orderingKey` (any state). */
  orderingKey?: string;
  /** Enqueued at or after this instant (epoch ms). */
  enqueuedFrom?: number;
  /** Enqueued before this instant (epoch ms). */
  enqueuedTo?: number;
  /** `lastError` contains this text, ignoring ASCII case (1..200 characters). */
  error?: string;
  /**
   * A payload field equals a JSON scalar, type included: `{ path: 'order.id', equals: 42 }`
   * matches `{"order":{"id":42}}`, not `{"order":{"id":"42"}}`. `path` is 1..8 dot-separated
   * identifiers (`[A-Za-z_][A-Za-z0-9_]*`).
   */
  payload?: { path: string; equals: JsonScalar };
  /**
   * A header equals a string: `{ name: 'alkstore-schedule', equals: 'nightly' }` finds the jobs a
   * schedule fired. `name` is 1..128 of `A-Za-z0-9_.-`; `equals` at most 1024 characters.
   */
  header?: { name: string; equals: string };
  /** The `next` cursor of the previous page (opaque). */
  cursor?: string;
  /** Page size, 1..1000, default 50. */
  limit?: number;
}

/** The states a search can ask for: those of {@link JobListState}, and `finished` (the job history). */
export type JobSearchState = JobListState | 'finished';

/**
 * One page of a search, newest job first. Each call reads at most
 * {@link SEARCH_SCAN_ROWS} rows by id, descending: of the jobs table (every
 * queue's rows, walked on the primary key; for `all` and `finished` merged with
 * the outcome records, walked the same way), or, for `state: 'dead'`, of the
 * queue's dead jobs (the dead index). So a call costs the same at any depth,
 * and a page may hold fewer than `limit` jobs (even none) while `next` is not
 * null: the search is not finished, follow `next`.
 */
export interface JobSearchPage {
  readonly jobs: JobInfo[];
  /** Cursor of the rest of the search, `null` once every row of the queue was looked at. */
  readonly next: string | null;
  /** Rows this call read (of every queue, unless the search is of dead jobs). */
  readonly scanned: number;
}

/** Most rows one {@link StoreAdmin.searchJobs} call reads. */
export const SEARCH_SCAN_ROWS = 20_000;

/**
 * One attempt of a job that ended in failure (`job.retry` or `job.fail`), as the store recorded it in
 * the same write (schema step 14). Successful attempts, released claims and claims that lapsed are not
 * recorded: the current attempt is the job row itself.
 */
export interface JobAttempt {
  /** The attempt's number (1 = first claim); a redriven job starts over and overwrites earlier numbers. */
  readonly attempt: number;
  /** The worker id that claimed this attempt, or null when the claim gave none. */
  readonly workerId: string | null;
  /**
   * When the attempt's lease began (epoch ms, database clock), derived as the deadline at the end
   * minus the queue's visibility timeout: the claim time, or the last heartbeat of that length; a
   * claim with a lease override or a heartbeat of another length shifts it.
   */
  readonly claimedAt: number | null;
  /** When the retry or fail was written (epoch ms, database clock). */
  readonly endedAt: number;
  /**
   * `retried`: back to pending; `dead`: this attempt dead-lettered the job (by retry / fail, or a
   * claim finding its lease lapsed with no attempts left, error `max attempts exceeded`); `lapsed`:
   * its lease ran out with no ack, retry or heartbeat (a crashed or stalled worker) and a claim
   * took the job over (error null; `endedAt` is the lease deadline).
   */
  readonly outcome: 'retried' | 'dead' | 'lapsed';
  /**
   * The error this attempt ended with: the thrown / passed Error's `stack` (name, message, then its
   * frames), cut to 8192 characters; for a value that is not an Error with a stack, the same text as
   * `lastError` (which keeps the message alone).
   */
  readonly error: string | null;
}

/** A job as its detail page shows it: the row, plus the worker holding it and its failed attempts. */
export interface JobDetail extends JobInfo {
  /** Worker id of the current claim while processing, else null (ended attempts: see `failedAttempts`). */
  readonly workerId: string | null;
  /** A pending job waiting behind an older live job of its `orderingKey`. */
  readonly blocked: boolean;
  /** Every attempt that ended in retry or dead, by attempt number (the job's `attempts` counts all claims). */
  readonly failedAttempts: readonly JobAttempt[];
}

/** Completed / retried / dead outcomes of one queue in one minute. */
export interface ThroughputPoint {
  readonly queue: string;
  /** Start of the minute (epoch ms, database clock). */
  readonly minute: number;
  /** Jobs acked. */
  readonly completed: number;
  /** Attempts that failed and went back to pending. */
  readonly retried: number;
  /** Jobs moved to dead by a worker (`fail`, or `retry` with attempts exhausted). */
  readonly dead: number;
  /**
   * Wait times of the jobs claimed then finished in this minute: from when each was due (its run
   * time, or its enqueue when later) to its claim, database clock.
   */
  readonly wait: LatencyStats;
  /** Run times of the attempts that ended in this minute (ack, retry, fail): from the claim to the outcome, on the worker's monotonic clock. */
  readonly run: LatencyStats;
}

/**
 * Upper bounds (ms, inclusive) of the latency histogram buckets of {@link LatencyStats}; the last
 * bucket holds everything above the last bound.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = Object.freeze([
  10, 30, 100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_800_000,
]);

/** Buckets of a latency histogram: one per bound of {@link LATENCY_BOUNDS_MS}, and one above the last. */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** Durations recorded in one minute: how many, their sum, and a histogram over {@link LATENCY_BOUNDS_MS}. */
export interface LatencyStats {
  readonly count: number;
  readonly sumMs: number;
  /** `buckets[i]` counts durations in (`LATENCY_BOUNDS_MS[i-1]`, `LATENCY_BOUNDS_MS[i]`]; the last one those above the last bound. */
  readonly buckets: readonly number[];
}

/** The histogram bucket of a duration (ms). */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i;
  return LATENCY_BOUNDS_MS.length;
}

/** Latency stats added together (several minutes, or several queues). */
export function sumLatency(all: readonly LatencyStats[]): LatencyStats {
  const buckets = new Array<number>(LATENCY_BUCKETS).fill(0);
  let count = 0;
  let sumMs = 0;
  for (const s of all) {
    count += s.count;
    sumMs += s.sumMs;
    for (let i = 0; i < LATENCY_BUCKETS; i++) buckets[i]! += s.buckets[i] ?? 0;
  }
  return { count, sumMs, buckets };
}

/**
 * An approximate quantile (`q` in 0..1) from the histogram: the bucket holding it, interpolated
 * linearly inside the bucket (the top bucket reports its lower bound). Null when nothing was recorded.
 */
export function latencyQuantile(stats: LatencyStats, q: number): number | null {
  if (stats.count <= 0) return null;
  const rank = Math.min(1, Math.max(0, q)) * stats.count;
  let seen = 0;
  for (let i = 0; i < LATENCY_BUCKETS; i++) {
    const n = stats.buckets[i] ?? 0;
    if (n > 0 && seen + n >= rank) {
      const low = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1]!;
      if (i === LATENCY_BOUNDS_MS.length) return low;
      const high = LATENCY_BOUNDS_MS[i]!;
      return low + ((high - low) * Math.max(0, rank - seen)) / n;
    }
    seen += n;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1]!;
}

/** A stream's head and its consumers. */
export interface StreamInfo {
  readonly name: string;
  /** Offset of the last event published (0 when none). */
  readonly headOffset: number;
  readonly consumers: readonly StreamConsumerInfo[];
}

/** One consumer's saved offset and how far behind the head it is. */
export interface StreamConsumerInfo {
  readonly consumer: string;
  readonly offset: number;
  /** `headOffset - offset` (events published after the saved offset, trims aside). */
  readonly lag: number;
}

/** Who holds a named lock, as the database sees it. */
export interface LockInfo {
  readonly name: string;
  readonly owner: string;
  /** Epoch ms (database clock). */
  readonly expiresAt: number;
  /** `expiresAt` is in the past: nobody holds it any more. */
  readonly expired: boolean;
}

/** The PostgreSQL LISTEN connection: `connected`, `down` (polling fallback) or `none` (no LISTEN: SQLite, or `listen: false`). */
export type ListenerState = 'connected' | 'down' | 'none';

/**
 * What {@link StoreAdmin.editJob} changes on a pending job; an absent field stays as it is.
 * The payload goes through the payload codec and size limit, as at enqueue.
 */
export interface JobEdit {
  readonly payload?: unknown;
  /** An integer in the int32 range; higher is claimed first. */
  readonly priority?: number;
  /** When the job becomes claimable (epoch ms, database clock). */
  readonly runAt?: number;
}

/**
 * A worker as its claims show it: the processing jobs of one queue that carry
 * its worker id. Derived from the jobs table, so a worker appears while it
 * holds a job and an idle one does not.
 */
export interface WorkerInfo {
  /** The id the worker claims with (`''` for claims made without one). */
  readonly workerId: string;
  readonly queue: string;
  /** Jobs of the queue it holds now. */
  readonly jobs: number;
  /** The earliest claim deadline among them (epoch ms, database clock). */
  readonly earliestDeadline: number;
  /** The latest claim deadline among them: it moves forward while the worker heartbeats. */
  readonly latestDeadline: number;
  /** Every one of its claims is past its deadline: the worker stopped, or stalls; its jobs go to the next claim. */
  readonly lapsed: boolean;
}

/** How often a worker node writes its heartbeat row by default (`StoreAdmin.heartbeat`; the Nest worker host does). */
export const NODE_HEARTBEAT_MS = 10_000;
/** A node whose last heartbeat is older than this many of its intervals is shown as gone (30 s at the default). */
export const NODE_GONE_INTERVALS = 3;
/** The retention runner deletes a node's row this long after its last heartbeat (one hour). */
export const NODE_REMOVED_AFTER_MS = 3_600_000;
/** Most nodes {@link StoreAdmin.nodes} reads. */
export const NODE_SCAN_ROWS = 1000;

/** One queue (or outbox) a worker node runs, as its heartbeat says. */
export interface NodeQueue {
  /** The stored queue name (an outbox's is `__alkstore_outbox:<name>`). */
  readonly queue: string;
  /** Handlers the node runs at once on it (its concurrency limit). */
  readonly concurrency: number;
  /** Jobs it holds on it at the heartbeat: claimed, running or buffered. */
  readonly running: number;
}

/** What a worker node writes on each heartbeat. */
export interface NodeHeartbeat {
  /** The node's worker id (the id it claims with), 1..200 characters. */
  readonly nodeId: string;
  readonly host: string;
  readonly pid: number;
  /** The alkstore package version the node runs. */
  readonly version: string;
  /** When the node started (epoch ms). */
  readonly startedAt: number;
  /** How often it heartbeats (ms, 100..600000): it is gone after {@link NODE_GONE_INTERVALS} of them. */
  readonly intervalMs: number;
  /** Every queue and outbox it runs, idle ones too (at most 500). */
  readonly queues: readonly NodeQueue[];
}

/** A worker node as the fleet view shows it: its last heartbeat, and whether it stopped heartbeating. */
export interface NodeInfo extends NodeHeartbeat {
  /** The last heartbeat (epoch ms, database clock). */
  readonly heartbeatAt: number;
  /** No heartbeat for {@link NODE_GONE_INTERVALS} of its intervals: the node stopped or stalls. */
  readonly gone: boolean;
}

/** Most processing jobs {@link StoreAdmin.workers} reads. */
export const WORKER_SCAN_ROWS = 10_000;

/** Options of {@link StoreAdmin.receipts}. */
export interface ReceiptPageOpts {
  /** The `next` cursor of the previous page (opaque). */
  cursor?: string;
  /** Page size, 1..1000, default 50. */
  limit?: number;
}

/** One page of an outbox's delivery receipts, latest delivery first. */
export interface ReceiptPage {
  readonly receipts: StoredReceipt[];
  /** Cursor of the next page, `null` on the last one. */
  readonly next: string | null;
}

/** Name-keyset paging of small lists (streams). */
export interface NamePageOpts {
  /** Names strictly after this one. */
  after?: string;
  /** 1..1000, default 200. */
  limit?: number;
}

/** How many dependency edges {@link StoreAdmin.flowOf} reads at most (a larger flow's view is cut, `truncated` set). */
export const FLOW_VIEW_EDGES = 500;

/** One dependency edge of a flow as an operator sees it: job `parent` waits for job `id`. */
export interface FlowEdge {
  /** The job that waits. */
  readonly parent: number;
  readonly id: number;
  readonly queue: string;
  /** The dependency's state now; `unknown` when its row and outcome record are gone (pruned by retention). */
  readonly state: JobInfo['state'] | 'unknown';
  /** The dependency's last error (a dead one's reason), else null. */
  readonly lastError: string | null;
  /** The dependency's own `onChildDead` policy while it waits for dependencies of its own, else null. */
  readonly policy: ChildPolicy | null;
}

/** A job's place in a flow (docs/flows.md), from the flow tables while the flow is live. */
export interface FlowView {
  /** Jobs waiting for this one (its parents), id ascending, at most 50. */
  readonly parents: readonly { readonly id: number; readonly queue: string }[];
  /** This job's `onChildDead` policy, or null when it waits for nothing. */
  readonly policy: ChildPolicy | null;
  /** How many of this job's dependencies have not ended yet (0 when none). */
  readonly pending: number;
  /** Every dependency below this job, the first {@link FLOW_VIEW_EDGES} found breadth first. */
  readonly edges: readonly FlowEdge[];
  /** More edges exist than {@link FLOW_VIEW_EDGES}. */
  readonly truncated: boolean;
}

/**
 * Read and repair operations for dashboards, the CLI and health checks. Every
 * list is keyset-paged and counts come from `stats()`, so each call costs the same
 * at a million jobs as at ten. Queue names here are the stored names,
 * engine-derived ones (`__alkstore_outbox:<name>`) included.
 */
export interface StoreAdmin {
  /** Names of every queue with jobs, settings or recent throughput, ascending (one index seek per queue). */
  queueNames(): Promise<string[]>;
  /** One page of a queue's jobs in a state. */
  listJobs(queue: string, opts?: ListJobsOpts): Promise<JobPage>;
  /**
   * Jobs of a queue matching `query`, newest first, keyset-paged by id; each
   * call reads at most {@link SEARCH_SCAN_ROWS} rows (see {@link JobSearchPage}).
   * Bad input is an `InvalidArgument` naming the field, before any I/O.
   */
  searchJobs(queue: string, query?: JobSearch): Promise<JobSearchPage>;
  /** One job with its latest worker id and failed attempts, or null when the queue has no such job. */
  jobDetail(queue: string, id: number): Promise<JobDetail | null>;
  /** A job's flow: the jobs waiting for it, its policy and its dependency tree with states (empty when it is in no live flow). */
  flowOf(id: number): Promise<FlowView>;
  /** Of these job ids, the ones waiting for dependencies, with how many have not ended yet (the queue list's "waiting on N"). */
  waitingOn(ids: readonly number[]): Promise<Map<number, number>>;
  /**
   * Changes the payload, priority or run time of a pending job (blocked ones included); resolves
   * `false`, changing nothing, when the queue has no such pending job (it was claimed, finished or
   * cancelled meanwhile). Counters and wakes follow, as for an enqueue. Bad input is a typed error
   * naming the field, before any I/O.
   */
  editJob(queue: string, id: number, edit: JobEdit): Promise<boolean>;
  /**
   * The workers holding jobs now, by worker id then queue, from at most {@link WORKER_SCAN_ROWS}
   * processing jobs (the processing index). There is no registry: an idle worker is not listed.
   */
  workers(): Promise<WorkerInfo[]>;
  /**
   * Writes (or refreshes) a worker node's heartbeat row, stamped with the database clock. Bad input is
   * an `InvalidArgument` naming the field, before any I/O.
   */
  heartbeat(node: NodeHeartbeat): Promise<void>;
  /**
   * Every worker node with a heartbeat row, idle ones too, by node id (at most {@link NODE_SCAN_ROWS}).
   * A node silent for {@link NODE_GONE_INTERVALS} of its intervals is `gone`; the retention runner deletes its row after
   * {@link NODE_REMOVED_AFTER_MS}.
   */
  nodes(): Promise<NodeInfo[]>;
  /**
   * The jobs a worker id holds now (processing, claimed with that id), by queue then id, from at most
   * {@link WORKER_SCAN_ROWS} processing jobs; at most `limit` (1..1000, default 200).
   */
  heldBy(workerId: string, limit?: number): Promise<JobInfo[]>;
  /** Deletes a node's heartbeat row (a graceful stop); resolves whether there was one. */
  forgetNode(nodeId: string): Promise<boolean>;
  /** An outbox's stored delivery receipts (`__alkstore_outbox_receipts`), latest delivery first, keyset-paged. */
  receipts(outbox: string, opts?: ReceiptPageOpts): Promise<ReceiptPage>;
  /**
   * The reserved stream `__alkstore_audit` where the dashboard records who did
   * what (one JSON event per action). Readable like any stream; applications
   * should only read it.
   */
  auditLog(): Stream;
  /**
   * Every dead job of the queue back to pending with attempts reset (as `retryDead`), in batches;
   * resolves to how many moved and which stayed dead because a live job holds their unique key.
   */
  retryAllDead(queue: string): Promise<RedriveResult>;
  /** Deletes every dead job of the queue; resolves to how many. */
  purgeAllDead(queue: string): Promise<number>;
  /**
   * Per-minute outcomes since `sinceMs` (epoch ms), oldest first; `queue`
   * null for every queue. This process's not-yet-written counts are written first.
   */
  throughput(queue: string | null, sinceMs: number): Promise<ThroughputPoint[]>;
  /** Streams with head offset and consumers, name ascending. */
  streams(opts?: NamePageOpts): Promise<StreamInfo[]>;
  /**
   * The row of a lock (reserved names allowed: `__alkstore_scheduler` is the scheduler's leadership), or null.
   * An expired lock's row stays until it is taken again or the retention runner deletes it.
   */
  lock(name: string): Promise<LockInfo | null>;
  /** State of this store's LISTEN connection. */
  listener(): ListenerState;
}
