import type { StoreAdmin } from './admin.js';
import type { Jsonified } from './codec.js';
import type { InboxClaim, InboxEntry, InboxFailure, InboxOpts, InboxSettings } from './inbox.js';
import type { JobHeaders } from './job-extras.js';
import type { QueueLimits } from './limits.js';
import type { JobOpts, QueueOpts } from './options.js';
import type { WaitOpts } from './results.js';
import type { ChildResult, FlowJob, FlowNode } from './flows.js';

/** Which engine backs a store. Consumer code never needs to branch on it. */
export type EngineKind = 'sqlite' | 'postgres';

/** An opaque "something changed on this channel, re-read" signal. */
export interface Wake {
  readonly channel: string;
}

/**
 * Wakes for one channel, starting from the moment `listen` was called.
 * Wakes may be coalesced or repeated; consumers must be idempotent on wake.
 */
export interface WakeReceiver extends AsyncIterable<Wake> {
  readonly channel: string;
  /** Next wake, or `null` once the receiver is closed (or `signal` aborts). */
  recv(signal?: AbortSignal): Promise<Wake | null>;
  /** Ends the receiver; a pending `recv` resolves `null` and async iteration ends. */
  close(): void;
  readonly closed: boolean;
}

/** A durable stream event (SPEC §6). Offsets are per stream, immutable, ascending. */
export interface StreamEvent<T = unknown> {
  readonly offset: number;
  readonly stream: string;
  readonly key: string | null;
  /** The payload as it comes back: the JSON shape of what was sent ({@link Jsonified}). */
  readonly payload: Jsonified<T>;
  /** Epoch milliseconds at publish (database clock). Informational, not an ordering field. */
  readonly createdAt: number;
}

/**
 * A durable subscription: replays events after the consumer's saved offset,
 * then follows live events. Offsets are saved explicitly only.
 */
export interface EventReceiver<T = unknown> extends AsyncIterable<StreamEvent<T>> {
  readonly stream: string;
  readonly consumer: string;
  /** Next event in offset order, or `null` once closed (or `signal` aborts). */
  next(signal?: AbortSignal): Promise<StreamEvent<T> | null>;
  /** Saves the consumer offset (monotone: a lower save is a no-op returning false). */
  saveOffset(offset: number): Promise<boolean>;
  close(): void;
  readonly closed: boolean;
}

/** A durable, per-consumer-offset log. */
export interface Stream {
  readonly name: string;
  /** Appends an event; resolves to its offset. */
  publish(payload: unknown): Promise<number>;
  /** Appends an event carrying `key` (non-empty; metadata only, ordering stays global by offset). */
  publishWithKey(key: string, payload: unknown): Promise<number>;
  /** Events with offset > `offset`, ascending, at most `limit` (default 1000). After a trim, resumes at the first remaining row. */
  readSince(offset: number, limit?: number): Promise<StreamEvent[]>;
  /** Events after the consumer's saved offset. */
  readFromConsumer(consumer: string, limit?: number): Promise<StreamEvent[]>;
  /** Replays from the consumer's saved offset, then follows live events without polling delay. */
  subscribe(consumer: string): EventReceiver;
  /** Monotone checkpoint; resolves `false` (no-op) when `offset` is not above the saved one. */
  saveOffset(consumer: string, offset: number): Promise<boolean>;
  /** The consumer's saved offset, 0 when none. */
  getOffset(consumer: string): Promise<number>;
  /** Deletes events with offset <= horizon; resolves to the number deleted. Emits no wake. */
  trimTo(horizon: number): Promise<number>;
}

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

/** A transactional outbox: a helper over its backing queue `__alkstore_outbox:<name>`. `T` is the payload type (default `unknown`). */
export interface Outbox<T = unknown> {
  readonly name: string;
  /** The backing queue (derived name, outbox defaults: visibility 60 s, 5 attempts). */
  readonly queue: Queue<T>;
  enqueue(payload: T, opts?: JobOpts): Promise<number>;
  /**
   * The message id of the row `rowId` (a job id of this outbox): `<storeId>:<rowId>`, or
   * `<messageIdPrefix>:<storeId>:<rowId>` with the store's `messageIdPrefix`. No other store
   * produces it, and every attempt of the row carries the same one: the publishers send it as the
   * broker's dedup id and the envelope's `messageId`; a delivery handler of your own should too.
   * A row enqueued before the store had an id keeps its bare row id (docs/brokers.md, Message ids).
   * Pure: no I/O.
   * @throws InvalidArgument when `rowId` is not a job id
   */
  messageId(rowId: number): string;
  /**
   * Pull one message: claim, run `delivery`, ack on success, retry with the
   * queue's backoff on a throw; a `PermanentError` dead-letters it at once
   * (`lastError` `permanent: <message>`, as the dispatcher writes it).
   * Resolves `false` when there was no work.
   */
  runOnce(workerId: string, delivery: (job: Job<T>) => Promise<void>): Promise<boolean>;
  /** Stores brokers' receipts of delivered messages (upsert by message id), on their own. */
  recordReceipts(receipts: readonly { readonly messageId: number; readonly receipt: DeliveryReceipt }[]): Promise<void>;
  /**
   * Acks delivered messages, each fenced by its claim token as in
   * `queue.ackBatch`, and stores their brokers' receipts (upsert by message
   * id) in the same write: the dispatcher's path, so a message is never acked
   * without its receipt. Every receipt is stored, whether or not its ack still
   * held the claim (the broker has the message either way). Resolves to how
   * many acks landed.
   */
  ackDelivered(
    deliveries: readonly { readonly job: Pick<Job, 'id' | 'claimToken'>; readonly receipt: DeliveryReceipt }[],
  ): Promise<number>;
  /** The broker's receipt of a delivered message, or null (not delivered through a publisher, or pruned). */
  receipt(messageId: number): Promise<StoredReceipt | null>;
  /** Deletes receipts delivered more than `olderThanMs` ago (database clock); resolves to how many. */
  pruneReceipts(olderThanMs: number): Promise<number>;
}

/**
 * What a broker confirmed for one published message: `broker` names it, the
 * other fields are its own (JetStream `stream`/`seq`/`duplicate`, RabbitMQ
 * `exchange`/`routingKey`/`confirmed`, Redis `entryId`, …).
 */
export interface DeliveryReceipt {
  readonly broker: string;
  readonly [field: string]: string | number | boolean;
}

/** A receipt as stored with its delivered message. */
export interface StoredReceipt {
  readonly outbox: string;
  readonly messageId: number;
  readonly receipt: DeliveryReceipt;
  /** Epoch ms, database clock. */
  readonly deliveredAt: number;
}

/**
 * A consumer inbox (SPEC §11): makes a consumer's effects effectively-once by
 * claiming each message id inside the effect's own transaction.
 *
 * ```ts
 * const inbox = store.inbox('billing');
 * await store.withTx(async (tx) => {
 *   if ((await inbox.claim(tx, envelope.messageId)) !== 'claimed') return; // seen: skip, then ack
 *   await tx.enqueue('invoices', payload);                                  // the effect
 * });
 * ```
 */
export interface Inbox {
  readonly name: string;
  /** Resolved options, with the retention floor they imply. */
  readonly settings: InboxSettings;
  /** Same as `tx.inboxClaim(name, messageId)`; `tx` is the `tx` of `store.withTx(fn)` or of `store.joinTransaction(open, fn)`. */
  claim(tx: TxOps, messageId: string): Promise<InboxClaim>;
  /**
   * Records a failed attempt after the effect's transaction rolled back (its
   * own write): `'retry'` below `maxAttempts`, else `'dead'` (later claims
   * answer `'dead'`). A message already done stays done (`'retry'` is never
   * answered for it: the answer is `'dead'` only when it is dead).
   */
  fail(messageId: string, error: unknown): Promise<InboxFailure>;
  get(messageId: string): Promise<InboxEntry | null>;
  /**
   * Deletes done entries older than `olderThanMs` (default: the retention
   * floor). A value below the floor is refused with `InvalidOption` naming both.
   */
  prune(olderThanMs?: number): Promise<number>;
}

/** A TTL-bounded named lock. Exclusion lapses silently at expiry. */
export interface Lock {
  readonly name: string;
  readonly owner: string;
  /** Expiry as of acquisition or the last successful renew (epoch ms, database clock). */
  readonly expiresAt: number;
  /** Sets expiry to now + ttlMs while still held; `false` once lost. */
  renew(ttlMs: number): Promise<boolean>;
  /** Releases while still held; `false` once lost. */
  release(): Promise<boolean>;
}

/**
 * What a schedule does with boundaries that elapsed while no runner fired them
 * (SPEC §10): `'all'` enqueues each of them, at most 64, then skips forward;
 * `'latest'` enqueues one and skips forward; `'none'` skips forward without
 * firing, except that a runner reaching the oldest missed boundary within
 * {@link CATCH_UP_GRACE_MS} (60 s) still fires it once.
 */
export type CatchUpPolicy = 'all' | 'latest' | 'none';

/** Options of a schedule, and what is stamped on every job it fires. */
export interface ScheduleOpts {
  priority?: number;
  maxAttempts?: number;
  expiresInMs?: number;
  /**
   * First boundary (epoch ms). `@every`: that instant; cron: the first matching instant at or after it.
   * Default: now + interval (`@every`), the first matching instant after now (cron).
   * Ignored on an upsert that keeps the same spec and zone.
   */
  startAt?: number;
  /** IANA time zone the cron expression is read in (default `UTC`). `@every` ignores it. */
  timeZone?: string;
  /** What to do with boundaries missed while no runner fired them (default `'all'`). */
  catchUp?: CatchUpPolicy;
  /**
   * Marks the schedule as owned by code (the Nest module uses `alkstore:nest`): whoever
   * owns it may remove it once the code that declared it is gone. Default null: nothing
   * but an explicit `unschedule` removes it.
   */
  owner?: string | null;
}

/** A stored schedule. */
export interface Schedule {
  readonly name: string;
  readonly spec: string;
  /** The `@every` interval (ms); null for a cron expression. */
  readonly intervalMs: number | null;
  /** IANA zone the spec is read in (`UTC` unless set). */
  readonly timeZone: string;
  readonly catchUp: CatchUpPolicy;
  readonly queue: string;
  readonly payload: unknown;
  readonly priority: number;
  readonly maxAttempts: number | null;
  readonly expiresInMs: number | null;
  /** Next boundary to fire (epoch ms). While paused, the runner moves it forward without firing. */
  readonly nextFireAt: number;
  /** Paused by an operator: the runner fires nothing until `resumeSchedule`. Upserts keep it. */
  readonly paused: boolean;
  /** The code that owns the schedule (see {@link ScheduleOpts.owner}); null when created by hand. */
  readonly owner: string | null;
}

/** The holder of the scheduler's leadership lock `__alkstore_scheduler`. */
export interface SchedulerLeader {
  /** The runner's owner id (`RunSchedulesOpts.owner`; the Nest module uses its `workerId`). */
  readonly owner: string;
  /** When its lock lapses unless renewed (epoch ms, database clock). */
  readonly expiresAt: number;
}

/** One consistent view of the schedules, for operators (`store.listSchedules()`). */
export interface ScheduleListing {
  /** The database clock when the listing was read. */
  readonly now: number;
  /** The runner currently leading, or null when no runner holds an unexpired lock. */
  readonly leader: SchedulerLeader | null;
  /** Every schedule, by name. */
  readonly schedules: Schedule[];
}

/** Options of `runRetention`. */
export interface RunRetentionOpts {
  /** Queues to sweep (their `sweepExpired`), read at every round so the list may grow. */
  queues?: () => readonly string[];
  /** Outboxes to sweep (their backing queues), read at every round. */
  outboxes?: () => readonly string[];
  /** Also sweep every queue and outbox the database has jobs of (`admin().queueNames()`), default false. */
  everyQueue?: boolean;
  /** Time between sweeps, default 60 000 ms. */
  intervalMs?: number;
  /** Lock owner identity; default a random id per call. */
  owner?: string;
  /** Told what each sweep that changed something did. */
  onSweep?: (target: string, result: { expired: number; purged: number }) => void;
  /** Told what each prune of a store-wide table that removed rows did (`'outbox receipts'`, `'inbox "billing"'`, …). */
  onPrune?: (target: string, removed: number) => void;
  /** Told about a failed sweep or lock call (the runner carries on). */
  onError?: (err: unknown) => void;
  /**
   * Inboxes to prune besides those opened through this store (`store.inbox(name, opts)`), read at
   * every round. Each is pruned at `inboxRetentionMs`, or at its retention floor when that is longer
   * and this store knows the inbox's options.
   */
  inboxes?: () => readonly string[];
  /**
   * How long an inbox entry is kept (ms, default 7 days): a done entry from when its effect
   * committed, a failed or dead one from when the message was first received. `null` keeps them
   * (prune with `inbox.prune`).
   */
  inboxRetentionMs?: number | null;
  /** How long outbox delivery receipts are kept (ms, default 7 days), for every outbox; `null` keeps them. */
  receiptRetentionMs?: number | null;
  /** How long an entry of the dashboard's audit log (`__alkstore_audit`) is kept (ms, default 90 days); `null` keeps it. */
  auditRetentionMs?: number | null;
  /**
   * Streams whose events are removed by age: stream name → how long an event is kept after its
   * publish (ms). Streams not listed keep every event until `stream.trimTo`.
   */
  streamRetention?: Readonly<Record<string, number>>;
}

/** Options of `runSchedules`. */
export interface RunSchedulesOpts {
  /** Lock owner identity; default a random id per call. */
  owner?: string;
  /** Longest sleep between ticks when nothing is due, default 1000 ms. Also how often a standby retries the lock. */
  maxTickMs?: number;
  /**
   * TTL of the leadership lock (ms, default 60 000, at least 1000): after a crash, another runner
   * leads at most this long (plus one `maxTickMs`) after the leader's last renew.
   */
  lockTtlMs?: number;
  /** How often the leader renews its lock (ms, default 20 000); at most half of `lockTtlMs`. */
  renewIntervalMs?: number;
}

/** The commit-atomic operations of a transaction (SPEC seam). */
export interface TxOps {
  /** Enqueue a job that becomes visible when the transaction commits. */
  enqueue(queue: string, payload: unknown, opts?: JobOpts): Promise<number>;
  /** `Queue.enqueueFlow` inside this transaction: the whole flow commits with it or not at all (the root job on `queue`). */
  enqueueFlow(queue: string, flow: FlowJob): Promise<FlowNode>;
  publish(stream: string, payload: unknown): Promise<number>;
  publishWithKey(stream: string, key: string, payload: unknown): Promise<number>;
  /** A wake that fires on commit and never on rollback. */
  notify(channel: string, payload?: string): Promise<void>;
  saveOffset(stream: string, consumer: string, offset: number): Promise<boolean>;
  outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number>;
  /**
   * Inbox guard (SPEC §11): inserts (inbox, messageId) first, in this
   * transaction. `'claimed'`: run the effect here, it commits with the claim;
   * `'duplicate'`: another transaction claimed it (committed, or live: this
   * call then waits for it to end); `'dead'`. Prefer `store.inbox(name).claim(tx, id)`.
   */
  inboxClaim(inbox: string, messageId: string): Promise<InboxClaim>;
}

/**
 * How alkstore runs its SQL on a transaction your ORM opened (a TypeORM `QueryRunner`, or the
 * runner an `open` function of `alkstore/adapters` builds). alkstore runs its statements through
 * `query` and never commits: the ORM does.
 */
export interface QueryRunnerLike {
  /** False once the ORM's transaction ended: alkstore then refuses every write through it. */
  readonly isTransactionActive: boolean;
  readonly isReleased?: boolean;
  query(sql: string, parameters?: unknown[], useStructuredResult?: boolean): Promise<unknown>;
}

/**
 * One transaction of your ORM as an `open` function hands it to the store: `queryRunner` is how
 * alkstore runs its statements on it, `handle` is the ORM's own transaction object (Prisma's
 * transaction client, TypeORM's `EntityManager`, Kysely's or knex's `trx`, a `pg` client, …),
 * given to your function next to `tx`.
 */
export interface JoinedTx<H> {
  readonly queryRunner: QueryRunnerLike;
  readonly handle: H;
}

/** What the store tells an `open` function before it opens anything, so that it can refuse a mismatch before any I/O. */
export interface TxOpenContext {
  /** The store's engine: an ORM handle on the other SQL dialect cannot share a transaction with it. */
  readonly engine: EngineKind;
}

/**
 * Opens one transaction of your ORM, calls `body` with it, and commits when `body` resolves (rolls
 * back when it rejects), resolving to what `body` resolved to. `alkstore/adapters` has one per ORM
 * (`openTypeOrm`, `openPrisma`, `openDrizzle`, `openKysely`, `openKnex`, `openPg`); any other ORM
 * can be joined with a function of this shape.
 */
export type TxOpen<H> = <T>(body: (joined: JoinedTx<H>) => Promise<T>, store: TxOpenContext) => Promise<T>;

/** Where alkstore logs. Nest's `Logger` fits. Default: silent except warnings to stderr. */
export interface StoreLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string, error?: unknown): void;
}

/** One handle over every mechanism. */
export interface Store {
  readonly engine: EngineKind;
  /**
   * This store's id: a random UUID made when its tables were created (so a second schema, another
   * SQLite file or a dropped and re-created database each have their own), kept in the engine's
   * meta table and read at open. Part of every outbox message id (`Outbox.messageId`).
   */
  readonly storeId: string;

  notify(channel: string, payload?: string): Promise<void>;
  listen(channel: string): WakeReceiver;

  stream(name: string): Stream;

  /** A queue handle; `opts` are stamped on jobs enqueued through it and through `tx.enqueue(name)` in this process. */
  queue(name: string, opts?: QueueOpts): Queue;
  outbox(name: string, opts?: QueueOpts): Outbox;
  outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number>;
  /** A consumer inbox handle (SPEC §11). @throws InvalidOption on bad options, name errors on a bad name. */
  inbox(name: string, opts?: InboxOpts): Inbox;

  tryLock(name: string, owner: string, ttlMs: number): Promise<Lock | null>;

  /** Upserts a schedule by name. Same spec keeps the stored next fire; a new spec restarts it. */
  schedule(name: string, spec: string, queue: string, payload: unknown, opts?: ScheduleOpts): Promise<Schedule>;
  unschedule(name: string): Promise<boolean>;
  getSchedule(name: string): Promise<Schedule | null>;
  /**
   * Runs the leader-elected scheduler until `signal` aborts (then resolves).
   * Rejects with `LeadershipLost` when a renew of `__alkstore_scheduler` fails.
   */
  runSchedules(signal: AbortSignal, opts?: RunSchedulesOpts): Promise<void>;
  /**
   * Sweeps expired jobs and past-retention dead letters (`sweepExpired`) of the
   * given queues and outboxes every `intervalMs` while this caller holds the
   * `__alkstore_retention` lock (one replica sweeps at a time), until `signal`
   * aborts, and prunes the store-wide tables: delivery receipts, inbox entries,
   * expired locks, the audit log, streams given a retention, day-old throughput
   * minutes and old wake rows (docs/operations.md, "What each table holds").
   * Errors are reported to `onError`, never thrown.
   */
  runRetention(signal: AbortSignal, opts?: RunRetentionOpts): Promise<void>;
  /** Every schedule with its next fire, and the runner currently leading (operators, dashboards). */
  listSchedules(): Promise<ScheduleListing>;
  /** Stops a schedule from firing until resumed, on every replica. `false` when there is no such schedule. */
  pauseSchedule(name: string): Promise<boolean>;
  /**
   * Lets a paused schedule fire again from its next boundary after now: boundaries that elapsed
   * while paused are never fired. `false` when there is no such schedule.
   */
  resumeSchedule(name: string): Promise<boolean>;
  /**
   * Enqueues one job of the schedule now, outside its boundaries (even while paused); the next
   * fire is unchanged. Resolves to the job id, or null when there is no such schedule.
   */
  triggerSchedule(name: string): Promise<number | null>;

  /**
   * Runs `fn` in a transaction of the store's own: commit when `fn` resolves, rollback when it
   * rejects (the same error is rethrown). On SQLite the store's other writes wait until it ends.
   */
  withTx<T>(fn: (tx: TxOps) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` inside a transaction your ORM opens, with alkstore joined to it: `open` (from
   * `alkstore/adapters`: `openTypeOrm(dataSource)`, `openPrisma(prisma)`, …) opens the transaction,
   * and `fn` gets alkstore's operations on it (`tx`) next to the ORM's own handle. alkstore's writes
   * commit with your business writes or vanish with them; wakes fire on commit.
   *
   * ```ts
   * await store.joinTransaction(openTypeOrm(dataSource), async (tx, em) => {
   *   const order = await em.save(Order, { customer });
   *   await tx.outboxEnqueue('deliveries', { orderId: order.id });
   * });
   * ```
   *
   * PostgreSQL: the transaction runs on its own pooled connection; nothing is serialized.
   * SQLite: joined transactions of one store run one at a time through its write path (the store's
   * own writes wait for them, at most `lockWaitTimeoutMs`), the write lock is taken when the
   * transaction starts, an ORM connection on another file than the store's is refused
   * (`InvalidOption` naming both files), a plain write of the same store inside `fn` is refused at
   * once (`TransactionInProgress`), and a worker's lease renewal that waited a quarter of its lease
   * for it rolls it back (`TransactionTimeout`).
   */
  joinTransaction<H, T>(open: TxOpen<H>, fn: (tx: TxOps, handle: H) => Promise<T>): Promise<T>;

  /** The database clock, epoch milliseconds. */
  now(): Promise<number>;

  /** Read and repair operations for dashboards, the CLI and health checks (keyset paging, bounded counts). */
  admin(): StoreAdmin;

  /** Closes the store; later calls reject with `Closed`. Idempotent. */
  close(): Promise<void>;
  readonly closed: boolean;
}
