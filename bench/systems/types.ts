/**
 * The seam every benchmarked system implements. Workloads (bench/workloads.ts)
 * only talk to this interface, so every system runs the identical workload.
 */

/** Called by a worker for each job, with the job's payload as the system hands it back. */
export type Handler = (payload: unknown) => void | Promise<void>;

export interface RunningWorker {
  /**
   * How many jobs are durably completed (acked / marked done / deleted) so far.
   * Systems that report completions in-process count them; the others query the database.
   */
  completed(): Promise<number>;
  stop(): Promise<void>;
}

/** A transactional-outbox path: a business row and a message committed together, delivered by the system's dispatcher/worker. */
export interface OutboxPath {
  /** How the business row and the message share one transaction. */
  readonly how: string;
  /** Starts the dispatcher; `handler` receives each delivered payload. */
  startDispatcher(handler: Handler): Promise<RunningWorker>;
  /**
   * Commits one business row plus one message in one transaction.
   * `beforeCommit` is called right before the commit is issued (latency origin).
   */
  produce(payload: unknown, beforeCommit?: () => void): Promise<void>;
}

/** Streams (alkstore only). */
export interface StreamPath {
  publish(stream: string, payload: unknown): Promise<number>;
  /** Reads everything after offset 0 in pages of `page`; resolves to the number of events read. */
  replay(stream: string, page: number): Promise<number>;
  /** Live subscriber from the stream's current tail; `onEvent` gets each payload. */
  subscribe(stream: string, onEvent: (payload: unknown) => void): Promise<{ stop(): Promise<void> }>;
}

/** Keyed enqueues (alkstore's unique and ordered keys; peers have their own names for these). */
export interface KeyedPath {
  /** One enqueue with a deduplication key; a live job with the key makes it a no-op. */
  enqueueUnique(queue: string, key: string, payload: unknown): Promise<void>;
  /** One batched call for `payloads`, all under one ordering key, in order. */
  enqueueOrdered(queue: string, key: string, payloads: readonly unknown[]): Promise<void>;
  /** One batched call for `payloads`, all under one concurrency key with a limit of 1 (B10); absent when the system has no per-key concurrency. */
  enqueueConcurrencyKeyed?: (queue: string, key: string, payloads: readonly unknown[]) => Promise<void>;
}

/** Flows of parent and child jobs (B9): alkstore's enqueueFlow, BullMQ's FlowProducer, pg-boss's flow(). */
export interface FlowPath {
  /** One flow in one call: a parent on `parentQueue` with payload `parent`, waiting for `children` children on `childQueue`. */
  enqueueFlow(parentQueue: string, childQueue: string, parent: unknown, children: number): Promise<void>;
}

export interface SystemInstance {
  /** Settings actually used (recorded in the JSON and docs). */
  readonly settings: Record<string, unknown>;
  /** Notes on how a workload maps onto this system. */
  readonly notes: string[];
  /** Creates a queue if the system needs it; returns the name to use. */
  prepareQueue(name: string): Promise<string>;
  /**
   * One enqueue, one commit. `markStart`, when given, is called when the
   * enqueue call starts (a child-process peer calls it at the child's start
   * instant, so the stdio hop is not counted as the peer's latency).
   */
  enqueue(queue: string, payload: unknown, markStart?: () => void): Promise<void>;
  /** One batched call for all `payloads`, or undefined when the system has none. */
  enqueueMany?: (queue: string, payloads: readonly unknown[]) => Promise<void>;
  /** A worker with concurrency 10 on `queue` (the system's fastest documented settings). */
  startWorker(queue: string, handler: Handler): Promise<RunningWorker>;
  outbox?: OutboxPath;
  streams?: StreamPath;
  keyed?: KeyedPath;
  flows?: FlowPath;
  close(): Promise<void>;
}

export interface SystemFactory {
  readonly name: string;
  /** Package whose version is reported. */
  readonly pkg: string;
  /** Workloads the system has no equivalent for (skipped without creating an instance). */
  readonly lacks?: readonly string[];
  /** Why the system cannot run here, or null. Checked once per bench. */
  available(): Promise<string | null>;
  /** A fresh instance (fresh schema / file / key prefix). */
  create(): Promise<SystemInstance>;
}

/** Concurrency of every B2/B3/B5 worker. */
export const CONCURRENCY = 10;
/** Batch size of B1b and of the untimed B2 pre-enqueue. */
export const ENQUEUE_BATCH = 100;
