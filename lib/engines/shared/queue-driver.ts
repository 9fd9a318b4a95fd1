import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { ResolvedLimits } from '../../contract/limits.js';
import type { JobWrite, QueueOpts } from '../../contract/options.js';
import type { CancelTarget, ProgressWrites } from '../../contract/results.js';
import { cancelBy, type CancelBy } from './outcomes.js';
import type { ChildResult, FlowNode, FlowPlan } from '../../contract/flows.js';
import type {
  JobFields,
  JobInfo,
  QueueSettings,
  QueueStats,
  RedriveResult,
  WakeReceiver,
} from '../../contract/types.js';
import type { HandoffRegistry } from '../../internal/handoff.js';
import type { ReceiptRows } from '../../internal/outbox-handle.js';
import type { OutcomeCounter } from '../../internal/outcome-counter.js';

/**
 * A row just claimed, as a driver reports it: the {@link JobFields} with the payload and headers
 * still encoded (the job decodes them once), and the job's stamped backoff base for its retries.
 */
export interface ClaimedRow extends Omit<JobFields, 'payload' | 'headers'> {
  readonly payloadText: string;
  readonly headersText: string | null;
  readonly backoffBaseMs: number;
  /** When the job was due (epoch ms, database clock): the wait it ends is timed from here, or from its enqueue when later. */
  readonly runAt: number;
}

/** What a hand-off insert did: the job's id, and its claim (null when it went pending). */
export interface HandedOff {
  id: number;
  claimed: ClaimedRow | null;
}

/** What a claim returns: the rows it claimed and, when fewer than asked, ms to the queue's next future run_at (null: none or not known). */
export interface ClaimResult {
  readonly rows: readonly ClaimedRow[];
  readonly nextDueInMs: number | null;
}

/** A job's claim, as the fenced operations name it. */
/** Receipts of delivered outbox messages, written with their acks. */
export interface ReceiptWrite {
  readonly outbox: string;
  readonly rows: ReceiptRows;
}

export interface ClaimRef {
  readonly id: number;
  readonly claimToken: string;
  /** The claim's job has no ordering key (only trusted from our own handles): nothing can need promoting. */
  readonly plain: boolean;
}

/**
 * The data operations of one queue on one engine (River's `riverdriver`, BullMQ's `IQueueBackend`).
 * Every argument is already checked and resolved by the queue handle or the claimed job above it
 * (lib/engines/shared/queue.ts, job.ts); a driver holds SQL, connections and wakes only. Every
 * fenced operation acts only while `claimToken` is the job's current claim and its deadline has not
 * passed (database clock), and resolves false / null otherwise.
 */
export interface QueueDriver {
  /** The queue's name (validated, or engine-derived, by the store). */
  readonly queue: string;
  /** Throws `Closed` once the store is closed (a driver whose every operation refuses after close may do nothing). */
  guard(): void;
  /** Random source in [0, 1) of the retry backoff jitter (the `random` store option). */
  readonly random: () => number;
  /** Largest payload JSON in UTF-8 bytes (the `maxPayloadBytes` store option). */
  readonly maxPayloadBytes: number;
  /** Buffered throughput counts (dashboard). */
  readonly outcomes: OutcomeCounter;
  /** Idle workers of this store that plain enqueues may hand jobs to (`localHandoff`); null when off. */
  readonly handoff: HandoffRegistry | null;
  /** Context headers added to every enqueue (the `enqueueHeaders` store option); null: none. */
  readonly enqueueHeaders: EnqueueHeadersHook | null;

  /**
   * Inserts jobs with the key rules, in order, each seeing the ones before: a live job holding the
   * unique key wins (its id is returned; with `replace` a pending one takes the new payload, headers
   * and run time); a job behind a live job of its ordering key is inserted blocked.
   */
  insert(payloadTexts: readonly string[], stamp: JobWrite): Promise<number[]>;
  /** {@link insert} of one payload. */
  insertOne(payloadText: string, stamp: JobWrite): Promise<number>;
  /** Items with stamps of their own, in one transaction, in order, each as if inserted alone. */
  insertBulk(items: readonly { readonly text: string; readonly stamp: JobWrite }[]): Promise<number[]>;
  /**
   * Local hand-off: a plain job inserted already claimed by `workerId` when, in the same
   * transaction, the queue is neither paused nor rate-limited, the job is due now and no job a claim
   * would take first is waiting; otherwise inserted pending (waking) as {@link insert} does.
   */
  insertHandingOff(payloadText: string, stamp: JobWrite, workerId: string, leaseMs: number | null): Promise<HandedOff>;

  /** Claims up to `max` ready jobs in claim order; a candidate with exhausted attempts goes dead instead. */
  /** `follows`: a worker's claim (`FOLLOWING_CLAIM`), which may leave what only a claim from the head finds to the next full claim. */
  claim(max: number, leaseMs: number | null, workerId: string | null, follows?: boolean): Promise<ClaimResult>;
  /** Deletes the claimed job. */
  ack(job: ClaimRef): Promise<boolean>;
  /**
   * Deletes every claimed job still ours; resolves to how many. With `receipts` (an outbox's backing
   * queue), the brokers' receipts are upserted in the same write, every one of them whatever the fence says.
   */
  ackBatch(jobs: readonly ClaimRef[], receipts?: ReceiptWrite | null): Promise<number>;
  /** Upserts an outbox's receipts on their own (the acks go another way). */
  putReceipts(receipts: ReceiptWrite): Promise<void>;
  /**
   * Back to pending after `delayMs`, or dead when this claim was the last attempt; null when the claim is gone.
   * `detail` (the error's stack, bounded; `errorText` when absent) goes to the attempt's row only.
   */
  retry(job: ClaimRef, delayMs: number, errorText: string, detail?: string): Promise<'retried' | 'dead' | null>;
  /** Dead at once with `errorText` as the last error; `detail` as in {@link QueueDriver.retry}. */
  fail(job: ClaimRef, errorText: string, detail?: string): Promise<boolean>;
  /** Sets the deadline to now + extendMs; resolves to the new deadline (database clock). */
  heartbeat(job: ClaimRef, extendMs: number): Promise<number | null>;
  /** Back to pending at once, giving back the attempt the claim consumed. */
  release(job: ClaimRef): Promise<boolean>;

  /** The job in any state, outcome records included. */
  getJob(id: number): Promise<JobInfo | null>;
  getJobByKey(uniqueKey: string): Promise<JobInfo | null>;
  setPaused(paused: boolean): Promise<void>;
  /** `null` removes the cap. */
  setRateLimit(limit: { max: number; perMs: number } | null): Promise<void>;
  /** Writes the given limits (`undefined` fields kept) and wakes the queue's workers. */
  setLimits(limits: ResolvedLimits): Promise<void>;
  settings(): Promise<QueueSettings>;
  sweepExpired(): Promise<{ expired: number; purged: number }>;
  /** `after`: null from the first page. */
  listDead(before: number | null, after: number | null, limit: number): Promise<JobInfo[]>;
  /** `ids` non-empty. */
  retryDead(ids: readonly number[]): Promise<RedriveResult>;
  /** `ids` non-empty. */
  purgeDead(ids: readonly number[]): Promise<number>;
  stats(): Promise<QueueStats>;
  /** A receiver of the queue's wake channel. */
  listen(): WakeReceiver;

  // Results, progress and cancel (SPEC §11; the engines' outcomes.ts).
  /**
   * Deletes the claimed job and writes its `completed` record (result, progress: null keeps the row's) in the same statement; wakes result waiters.
   * `settles` (a job something depends on): its dependents are settled in the same transaction.
   */
  ackOutcome(
    job: ClaimRef,
    resultText: string | null,
    progressText: string | null,
    settles?: boolean,
  ): Promise<boolean>;
  /** Writes the claimed job's progress (fenced); wakes the queue's progress channel. */
  progress(job: ClaimRef, text: string): Promise<boolean>;
  /** The store's progress writes not landed yet (`job.progress` never waits for them; close writes them). */
  readonly progressWrites: ProgressWrites;
  /** Wakes the queue's result waiters (a job went dead). */
  wakeWaiters(): Promise<void>;
  /** Live jobs end as `cancelled` records (waking the workers of processing ones), dead ones are deleted; resolves how many ended. */
  cancelJobs(target: CancelTarget): Promise<number>;
  /** Of `ids` (non-empty), those recorded `cancelled`, ascending. */
  cancelledAmong(ids: readonly number[]): Promise<number[]>;
  /** A receiver of one of the queue's engine channels (results, cancels, progress). */
  listenOn(channel: string): WakeReceiver;

  // Flows (SPEC §11; the engines' flows.ts, docs/flows.md).
  /** The registered options of another queue of the store (a flow's children), or the defaults. */
  queueOptsOf(queue: string): Required<QueueOpts>;
  /** Inserts a checked flow in one transaction; refuses a missing, dead or cancelled dependency before any write. */
  insertFlow(plan: FlowPlan): Promise<FlowNode>;
  /** Settles the dependents of jobs `ids` that just ended (dead, cancelled), in one transaction. */
  settleFlows(ids: readonly number[]): Promise<void>;
  /** The pending dependency count of a job that waits for them, else 0. */
  pendingDependencies(id: number): Promise<number>;
  /** What the handler of job `id` reads of its dependencies. */
  childResults(id: number): Promise<ChildResult[]>;
  /** The live descendants of job `id` (its dependencies, theirs, …), any queue. */
  liveDescendants(id: number): Promise<{ id: number; queue: string }[]>;
  /** Cancels job `id` of `queue` (any queue of the store), as {@link cancelJobs} does; resolves how many ended. */
  cancelIn(queue: string, id: number): Promise<number>;
}

/** What a store gives each of its queue drivers, on both engines. */
export interface DriverSettings {
  readonly random: () => number;
  readonly maxPayloadBytes: number;
  readonly outcomes: OutcomeCounter;
  readonly progressWrites: ProgressWrites;
  readonly handoff: HandoffRegistry | null;
  readonly enqueueHeaders: EnqueueHeadersHook | null;
}

/** The progress, result-wake and cancel operations of one engine on its store context `C` (the engines' outcomes.ts). */
export interface OutcomeOps<C> {
  writeProgress(c: C, queue: string, job: ClaimRef, text: string): Promise<boolean>;
  wakeWaiters(c: C, queue: string): Promise<void>;
  cancelJobs(c: C, queue: string, target: CancelBy): Promise<number>;
  cancelledAmong(c: C, queue: string, ids: readonly number[]): Promise<number[]>;
}

/**
 * The part of a {@link QueueDriver} both engines share: the store's settings, read once, and the
 * progress and cancel operations, which each engine's outcomes.ts runs on its store context.
 */
export abstract class QueueDriverBase<C extends DriverSettings> {
  readonly random: () => number;
  readonly maxPayloadBytes: number;
  readonly outcomes: OutcomeCounter;
  readonly progressWrites: ProgressWrites;
  readonly handoff: HandoffRegistry | null;
  readonly enqueueHeaders: EnqueueHeadersHook | null;

  constructor(
    private readonly store: C,
    readonly queue: string,
    private readonly outcomeOps: OutcomeOps<C>,
  ) {
    this.random = store.random;
    this.maxPayloadBytes = store.maxPayloadBytes;
    this.outcomes = store.outcomes;
    this.progressWrites = store.progressWrites;
    this.handoff = store.handoff;
    this.enqueueHeaders = store.enqueueHeaders;
  }

  progress(job: ClaimRef, text: string): Promise<boolean> {
    return this.outcomeOps.writeProgress(this.store, this.queue, job, text);
  }

  wakeWaiters(): Promise<void> {
    return this.outcomeOps.wakeWaiters(this.store, this.queue);
  }

  cancelJobs(target: CancelTarget): Promise<number> {
    return this.outcomeOps.cancelJobs(this.store, this.queue, cancelBy(target));
  }

  cancelledAmong(ids: readonly number[]): Promise<number[]> {
    return this.outcomeOps.cancelledAmong(this.store, this.queue, ids);
  }

  cancelIn(queue: string, id: number): Promise<number> {
    return this.outcomeOps.cancelJobs(this.store, queue, { by: 'id', id });
  }
}
