import type { JobInfo, RedriveResult } from './types.js';

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

/** Name-keyset paging of small lists (streams). */
export interface NamePageOpts {
  /** Names strictly after this one. */
  after?: string;
  /** 1..1000, default 200. */
  limit?: number;
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
  /** The row of a lock (reserved names allowed: `__alkstore_scheduler` is the scheduler's leadership), or null. */
  lock(name: string): Promise<LockInfo | null>;
  /** State of this store's LISTEN connection. */
  listener(): ListenerState;
}
