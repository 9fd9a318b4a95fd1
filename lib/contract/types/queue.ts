// Job queues: jobs, their states and the queue handle.
import type { Jsonified } from '../codec.js';
import type { ChildResult, FlowJob, FlowNode } from '../flows.js';
import type { JobHeaders } from '../job-extras.js';
import type { QueueLimits } from '../limits.js';
import type { JobOpts, QueueOpts } from '../options.js';
import type { WaitOpts } from '../results.js';
import type { WakeReceiver } from './wake.js';

/**
 * Where a job is in its life. `completed` and `cancelled` are outcome records (SPEC §11): a job acked
 * with a result (or with progress, or awaited by `enqueueAndWait`) and a cancelled job stay readable
 * until `resultRetentionMs` passes; a job acked with nothing to record is deleted (`getJob` → null).
 */
export type JobState = 'pending' | 'processing' | 'dead' | 'completed' | 'cancelled' | 'waiting-children';

/** A job row as `getJob` / `listDead` see it. Instants are epoch milliseconds (database clock). */
export interface JobInfo<T = unknown> {
  readonly id: number;
  readonly queue: string;
  readonly state: JobState;
  /** The payload as it comes back: the JSON shape of what was sent ({@link Jsonified}). */
  readonly payload: Jsonified<T>;
  readonly priority: number;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly visibilityTimeoutMs: number;
  readonly backoffBaseMs: number;
  readonly deadLetterRetentionMs: number | null;
  /** When the job is (or was) ready to be claimed. */
  readonly runAt: number;
  readonly enqueuedAt: number;
  readonly expiresAt: number | null;
  /** The claim deadline while processing, else null. */
  readonly claimedUntil: number | null;
  readonly lastError: string | null;
  readonly diedAt: number | null;
  /** The headers given at enqueue (`{}` when none). */
  readonly headers: JobHeaders;
  /** The job's `uniqueKey`, or null. */
  readonly uniqueKey: string | null;
  /** The job's `orderingKey`, or null. */
  readonly orderingKey: string | null;
  /** The job's `concurrencyKey` as resolved at enqueue (docs/limits.md), or null; null on a completed or cancelled job's outcome record. */
  readonly concurrencyKey: string | null;
  /** The job's `rateLimitKey` as resolved at enqueue (docs/limits.md), or null; null on a completed or cancelled job's outcome record. */
  readonly rateLimitKey: string | null;
  /** The handler's return value of a `completed` job (absent when it returned nothing). */
  readonly result?: unknown;
  /** The last value the job reported through `job.progress(value)` (absent when none). */
  readonly progress?: unknown;
  /** When a `completed` or `cancelled` job's outcome committed (epoch ms, database clock). */
  readonly finishedAt?: number;
  /** Of a `waiting-children` job (docs/flows.md): how many of its dependencies have not ended yet. */
  readonly pendingDependencies?: number;
}

/** What a claim tells about the job it claimed: the fields of {@link Job}. */
export interface JobFields<T = unknown> {
  readonly id: number;
  readonly queue: string;
  /** The payload as it comes back: the JSON shape of what was sent ({@link Jsonified}). */
  readonly payload: Jsonified<T>;
  readonly priority: number;
  /** Claims so far, this one included. */
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly claimToken: string;
  /**
   * The claim deadline (epoch ms, database clock) as of the claim or the last successful heartbeat. For
   * display and for comparison with other database instants only: a worker's clock may be off from the
   * database's, so never subtract `Date.now()` from it; time the claim from {@link Job.leaseMs} instead.
   */
  readonly deadline: number;
  /**
   * The lease this claim granted (ms): the claim's `visibilityTimeoutMs` override, or the job's stamped
   * visibility timeout. The deadline lies at least this long after the moment the claim was sent, so a
   * worker that times the lease on its own monotonic clock (`performance.now()`) from before it sent the
   * claim never overestimates what is left, whatever its wall clock says. After `heartbeat(extendMs)`
   * resolves `true`, the claim is good for `extendMs` from when the heartbeat was sent.
   */
  readonly leaseMs: number;
  readonly enqueuedAt: number;
  /** The headers given at enqueue (`{}` when none). */
  readonly headers: JobHeaders;
  /** The job's `uniqueKey`, or null. */
  readonly uniqueKey: string | null;
  /** The job's `orderingKey`, or null: while this job is live, later jobs with the key wait. */
  readonly orderingKey: string | null;
}

/**
 * A claimed job. Every op is fenced by the claim token and deadline: it
 * resolves `false` once the row was reclaimed, finished, or its deadline passed.
 */
export interface Job<T = unknown> extends JobFields<T> {
  /** The payload, typed by the caller (no runtime check). */
  payloadAs<U>(): U;
  /**
   * Ends the job. With a `result` (any JSON value: the payload codec and `maxPayloadBytes`, checked
   * before any I/O) the job stays readable as `completed` with it, in the same statement as the ack;
   * without one it is deleted, unless it reported progress or is awaited (then recorded too).
   */
  ack(result?: unknown): Promise<boolean>;
  /**
   * Reports progress (a number or a small JSON value, at most 4096 bytes): readable through
   * `getJob(id).progress` and announced on `queue.listenProgress()`. Resolves at once: the value is
   * written in the background, at most one write per second per job; a value reported inside the
   * window is written at its end (only the newest), and the last one always with the outcome (or
   * when the store closes). A retry clears it: each attempt starts with none. Resolves `false`
   * (dropping the value) once the claim is known to be lost: after an outcome op of this handle, a
   * heartbeat that found it gone, or a progress write that did.
   */
  progress(value: unknown): Promise<boolean>;
  /**
   * The outcomes of this job's dependencies (docs/flows.md), by ascending id: every completed one
   * with its result, and under `onChildDead: 'continue'` the dead and cancelled ones too. `[]` for a
   * job without dependencies.
   */
  childResults(): Promise<ChildResult[]>;
  /** Back to pending after `delayMs`, or the queue's equal-jitter backoff; dead when attempts are exhausted. */
  retry(error: unknown, delayMs?: number): Promise<boolean>;
  /** Moves the job to dead at once, keeping `error` as `lastError`. */
  fail(error: unknown): Promise<boolean>;
  /** Sets the deadline to now + extendMs (absolute, not additive). Refused after the deadline. */
  heartbeat(extendMs: number): Promise<boolean>;
  /** Returns a job whose work never started to pending at once, giving back the attempt its claim consumed. */
  release(): Promise<boolean>;
}

/** Per-claim options. */
export interface ClaimOpts {
  /** Lease of this claim (ms); default the job's stamped lease (its queue's `leaseMs`). */
  leaseMs?: number;
}

/**
 * Counts for metrics and dashboards, exact as of one snapshot. Read from
 * per-queue counters kept in the same transactions as the jobs, so the cost
 * does not grow with the queue's depth (docs/semantics.md, Queue stats).
 */
export interface QueueStats {
  /** Pending jobs, ready or not yet due. */
  readonly pending: number;
  readonly processing: number;
  readonly dead: number;
  /** Pending jobs not yet due (`runAt` in the future): a subset of `pending`. */
  readonly scheduled: number;
  /** Age of the oldest ready pending job in ms (0 when none). */
  readonly oldestPendingAgeMs: number;
}

/** One item of `queue.enqueueBulk`. */
export interface BulkJob<T = unknown> {
  /** The payload as it comes back: the JSON shape of what was sent ({@link Jsonified}). */
  readonly payload: Jsonified<T>;
  readonly opts?: JobOpts;
}

/** At most `max` claims in any window of `perMs` (windows are aligned to the epoch: `floor(now / perMs)`). */
export interface RateLimit {
  /** Integer in 1..2^31-1. */
  readonly max: number;
  /** Window length in ms, integer in 1..2^31-1. */
  readonly perMs: number;
}

/** A queue's cluster-wide settings, stored in the database (SPEC §10). */
export interface QueueSettings {
  /** A paused queue hands out nothing; jobs already claimed finish normally. */
  readonly paused: boolean;
  /** The claim cap, or null for none. */
  readonly rateLimit: RateLimit | null;
  /** Jobs of one `concurrencyKey` processing at once at most (docs/limits.md); 1 unless set. */
  readonly concurrencyLimit: number;
  /** Jobs of the queue processing at once at most, across every process; null for none. */
  readonly globalConcurrency: number | null;
  /** Claims of one `rateLimitKey` per window at most; null for none. */
  readonly keyRateLimit: RateLimit | null;
}

/**
 * What a redrive (`queue.retryDead`, `admin().retryAllDead`) did. Dead jobs go back to pending in id
 * order; a dead job whose unique key is held by a live job (or by an earlier job of the same
 * redrive) cannot go back without breaking the key's promise, so it stays dead, untouched, and is
 * reported here instead of failing the whole redrive. Cancel or finish the holder, then redrive it
 * again.
 */
export interface RedriveResult {
  /** Dead jobs moved back to pending. */
  readonly moved: number;
  /** How many stayed dead because their unique key is held (`conflictIds.length`). */
  readonly conflicts: number;
  /** Ids of those jobs, ascending. */
  readonly conflictIds: readonly number[];
}

/** Paging of dead letters, ordered by id ascending (stable). */
export interface ListDeadOpts {
  /** Only rows that died before this instant (epoch ms). */
  before?: number;
  /** Only rows with id greater than this (the last id of the previous page). */
  after?: number;
  /** Page size, default 100. */
  limit?: number;
}

/**
 * Handle on a named queue; its `opts` are stamped on every job enqueued through it.
 * `T` is the payload type, a compile-time promise only (default `unknown`): no runtime check.
 */
export interface Queue<T = unknown> {
  readonly name: string;
  readonly opts: Readonly<Required<QueueOpts>>;
  /** Enqueues one job; per-job `opts` override the queue's for this job only. */
  enqueue(payload: T, opts?: JobOpts): Promise<number>;
  /**
   * Enqueues many jobs in one transaction; resolves to their ids in order. With a `uniqueKey` the
   * call is one job: every id is the same (the first payload's job, or the holder's).
   */
  enqueueMany(payloads: readonly T[], opts?: JobOpts): Promise<number[]>;
  /**
   * Enqueues jobs with options of their own (e.g. one `uniqueKey` each) in one
   * transaction, in order, each as if enqueued alone: a job whose unique key is
   * held (by a live job or an earlier item) resolves to the holder's id.
   * Every item is validated before any write.
   */
  enqueueBulk(jobs: readonly BulkJob<T>[]): Promise<number[]>;
  /** Claims the next ready job (priority DESC, ready time, enqueue order), or `null`. */
  claimOne(workerId?: string, opts?: ClaimOpts): Promise<Job<T> | null>;
  /** Claims up to `max` ready jobs in one statement. */
  claimBatch(max: number, workerId?: string, opts?: ClaimOpts): Promise<Job<T>[]>;
  /** Acks many claimed jobs in one statement; resolves to how many were still ours and got deleted. */
  ackBatch(jobs: readonly Pick<Job, 'id' | 'claimToken'>[]): Promise<number>;
  /**
   * Cancels a job from any process. A pending or processing job ends as `cancelled` (an outcome,
   * never retried, never dead; its unique and ordering keys are free at once); the worker running it
   * sees its handler's `AbortSignal` abort (reason `JobCancelled`) within one wake of the commit
   * (at most its poll interval), and its later ack, retry or fail of that claim lands nowhere. A dead
   * job is deleted. `false` when there is no such job of this queue.
   */
  cancel(id: number): Promise<boolean>;
  /** Cancels the live (pending or processing) job holding `uniqueKey`, like `cancel`; `false` when none holds it. */
  cancelByKey(uniqueKey: string): Promise<boolean>;
  /** Cancels every live job of `orderingKey` (the key's whole line), like `cancel`; resolves how many. */
  cancelByOrderingKey(orderingKey: string): Promise<number>;
  /**
   * Enqueues a flow in one transaction (docs/flows.md): the root job on this queue and its
   * `children` (any queue, nested), the root claimable once every child is acked; `dependsOn`
   * adds existing job ids or `ref`s of the flow (a DAG). `InvalidFlow` before any write for a
   * cycle, a self-dependency, an unknown ref, or a dependency id that is missing, dead or cancelled.
   */
  enqueueFlow(flow: FlowJob): Promise<FlowNode>;
  /** Cancels job `parentId` of this queue and every descendant still live (any queue), running ones through their `AbortSignal`; resolves how many ended. */
  cancelFlow(parentId: number): Promise<number>;
  /** Of these job ids, those of this queue recorded as `cancelled`, ascending (a worker's cancel check). */
  cancelledAmong(ids: readonly number[]): Promise<number[]>;
  /** Wakes when a processing job of this queue is cancelled (workers re-check what they run). */
  listenCancels(): WakeReceiver;
  /** Wakes when a job of this queue reports progress (re-read it with `getJob`). */
  listenProgress(): WakeReceiver;
  /**
   * Resolves the result of job `id` once its outcome commits, in any process: the handler's return
   * value (`undefined` when the job was acked with nothing recorded). Rejects with `JobDead` (its
   * `lastError`) when the job dies, `JobCancelled` when it is cancelled, `ResultTimeout` after
   * `timeoutMs` (default 30 000; the job is left as it is). Woken by the commit, re-reading at least
   * once a second.
   */
  waitForResult(id: number, opts?: WaitOpts): Promise<unknown>;
  /** Enqueues a job (with the `alkstore-wait` header, so its outcome is always recorded) and waits for its result like `waitForResult`. */
  enqueueAndWait(payload: T, opts?: JobOpts & WaitOpts): Promise<unknown>;
  /** The job in any state, outcome records (`completed`, `cancelled`) included; null when unknown, acked without a record, or pruned. */
  getJob(id: number): Promise<JobInfo<T> | null>;
  /** The live (pending or processing) job holding `uniqueKey`, or null. */
  getJobByKey(uniqueKey: string): Promise<JobInfo<T> | null>;
  /**
   * Stops handing out jobs, on every replica, until `resume()`. In-flight jobs finish normally.
   * Claims through this store see the pause once it resolves; on PostgreSQL another store sees it
   * when the change notification sent on commit reaches it (the wake latency, like a claim that
   * raced the pause; 2 s at most should that store's LISTEN connection lose it silently).
   */
  pause(): Promise<void>;
  /** Hands out jobs again (and wakes this queue's workers). */
  resume(): Promise<void>;
  /**
   * Caps claims across every worker and process (`null` removes the cap); a new limit starts a
   * fresh window. Like {@link Queue.pause}, on PostgreSQL another store applies it when the change
   * notification reaches it; its claims before that do not count against the window.
   */
  setRateLimit(limit: RateLimit | null): Promise<void>;
  /**
   * Sets per-key concurrency, global concurrency and the per-key rate limit (docs/limits.md),
   * enforced in the claim across every process; a field given `null` is removed, an absent one kept.
   * Bad values are `InvalidArgument` naming the field, before any I/O.
   */
  setLimits(limits: QueueLimits): Promise<void>;
  /** The stored settings (defaults when none were set). */
  settings(): Promise<QueueSettings>;
  /** Moves every past-expiry row (any state) to dead, and deletes dead rows past their retention. */
  sweepExpired(): Promise<{ expired: number; purged: number }>;
  listDead(opts?: ListDeadOpts): Promise<JobInfo<T>[]>;
  /**
   * Back to pending now with attempts reset to 0; `lastError` kept. Ids that are not dead jobs of
   * this queue are ignored. Resolves to how many moved and which stayed dead because a live job
   * holds their unique key ({@link RedriveResult}).
   */
  retryDead(ids: readonly number[]): Promise<RedriveResult>;
  /** Deletes dead rows; resolves to how many. */
  purgeDead(ids: readonly number[]): Promise<number>;
  stats(): Promise<QueueStats>;
  /** Wakes when jobs may have become claimable on this queue (enqueue commits, retries, releases). */
  listen(): WakeReceiver;
}
