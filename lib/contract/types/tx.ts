// Transactions: the commit-atomic operations and the join seam of ORMs.
import type { FlowJob, FlowNode } from '../flows.js';
import type { InboxClaim } from '../inbox.js';
import type { JobOpts } from '../options.js';
import type { EngineKind } from './store.js';

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
