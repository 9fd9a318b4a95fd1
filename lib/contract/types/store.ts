// The store: one handle over every mechanism, its logger and maintenance runners.
import type { StoreAdmin } from '../admin.js';
import type { InboxOpts } from '../inbox.js';
import type { JobOpts, QueueOpts } from '../options.js';
import type { Inbox } from './inbox.js';
import type { Lock } from './lock.js';
import type { Outbox } from './outbox.js';
import type { Queue } from './queue.js';
import type { RunSchedulesOpts, Schedule, ScheduleListing, ScheduleOpts } from './schedule.js';
import type { Stream } from './stream.js';
import type { TxOpen, TxOps } from './tx.js';
import type { WakeReceiver } from './wake.js';

/** Which engine backs a store. Consumer code never needs to branch on it. */
export type EngineKind = 'sqlite' | 'postgres';

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
