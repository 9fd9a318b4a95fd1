// SQLite only: joining an ORM's transaction on the same file runs our SQL through its QueryRunner with SQLite's
import { WORKFLOW_SQL, type WorkflowSql } from '../../workflows/sql-seam.js';
import { sqliteWorkflowSql } from './workflow-sql.js';
// placeholders; PostgreSQL joins through its executor (QueryRunnerExecutor).
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { queueWakeChannel, streamWakeChannel } from '../../contract/names.js';
import { dependsOnFlow, hasDependencies, type FlowJob, type FlowNode } from '../../contract/flows.js';
import type { InboxClaim } from '../../contract/inbox.js';
import type { JobOpts } from '../../contract/options.js';
import { InvalidOption } from '../../contract/errors.js';
import type { QueryRunnerLike, TxOps } from '../../contract/types.js';
import { assertActiveRunner } from '../shared/tx.js';
import { NOW_SQL } from './connection.js';
import type { SqliteCore } from './context.js';
import { insertFlowPlan, type FlowAnswer, type FlowStep } from './flows.js';
import { claimAnswer, inboxClaimInput } from './inbox.js';
import { CLAIM_INBOX, GET_INBOX } from './inbox.sql.js';
import { INSERT_NOTIFY_SQL } from './notify/notify.sql.js';
import { insertPlan, type StepAnswer } from './queue-ops.js';
import { INSERT_JOB } from './queue.sql.js';
import { INSERT_EVENT, NEXT_SEQ, SAVE_OFFSET } from './stream.sql.js';
import {
  enqueueInput,
  flowInput,
  notifyInput,
  outboxEnqueueInput,
  publishInput,
  publishWithKeyInput,
  saveOffsetInput,
  type EnqueueInput,
  type PublishInput,
} from './tx-input.js';
import { asStoreError } from './writer.js';

/** Changes nothing, and so takes the write lock without a row to clean up. */
const TAKE_WRITE_LOCK = "UPDATE __alkstore_meta SET value = value WHERE key = '' AND 0";

/** The main database file of the connection a statement runs on ('' for an in-memory or temporary database). */
const MAIN_FILE = "SELECT file FROM pragma_database_list WHERE name = 'main'";

/** ORM connections whose file was found to be the store's, by that file: the comparison runs once per connection. */
const sameFile = new WeakMap<object, string>();

/**
 * What names the ORM connection a runner runs on, to remember its file: the better-sqlite3
 * connection under it, else the ORM client the `open` of alkstore/adapters names as its `source`.
 */
function connectionKeyOf(runner: QueryRunnerLike): object | null {
  const sync = syncConnectionOf(runner);
  if (sync !== null) return sync;
  const source = (runner as { source?: unknown }).source;
  return (typeof source === 'object' && source !== null) || typeof source === 'function' ? source : null;
}

/** A path as the file system knows it (symbolic links resolved), for comparing two names of one file. */
function canonical(path: string): string {
  const absolute = resolve(path);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/**
 * The better-sqlite3 connection under a TypeORM query runner (`driver.databaseConnection`),
 * when there is one: a revoked transaction is rolled back on it synchronously.
 */
interface SyncConnection {
  exec(sql: string): unknown;
  readonly inTransaction: boolean;
}

export function syncConnectionOf(runner: QueryRunnerLike): SyncConnection | null {
  const db = (runner as { driver?: { databaseConnection?: unknown } }).driver?.databaseConnection as
    Partial<SyncConnection> | undefined;
  return db !== undefined && typeof db.exec === 'function' && typeof db.inTransaction === 'boolean'
    ? (db as SyncConnection)
    : null;
}

interface Rows {
  records: Record<string, unknown>[];
  affected: number;
}

/**
 * The tx seam over a caller-owned TypeORM transaction on the same SQLite file:
 * our SQL runs through `queryRunner.query`, and the caller's commit makes it
 * visible. Wake rows are written in that transaction; the store's watcher sees
 * the commit through `PRAGMA data_version`.
 */
export class ExternalTxOps implements TxOps {
  constructor(
    private readonly core: Pick<SqliteCore, 'registeredQueueOpts'>,
    private readonly runner: QueryRunnerLike,
    private readonly assertOpen: () => void,
  ) {}

  async enqueue(queue: string, payload: unknown, opts?: JobOpts): Promise<number> {
    if (hasDependencies(opts)) return (await this.enqueueFlow(queue, dependsOnFlow(payload, opts))).id;
    return this.insertJob('tx.enqueue', enqueueInput(this.core, queue, payload, opts));
  }

  /**
   * The flow's jobs, edges and waits through the caller's connection, in its transaction (in a
   * savepoint: a flow refused halfway leaves nothing); a bad flow is refused before any write.
   * An enqueue settles nothing: edges to dependencies already ended are written done.
   */
  async enqueueFlow(queue: string, flow: FlowJob): Promise<FlowNode> {
    const plan = flowInput(this.core, queue, flow);
    return this.atomically('tx.enqueueFlow', async () => {
      const now = await this.now();
      const gen = insertFlowPlan(plan, now);
      let step = gen.next();
      while (!step.done) step = gen.next(await this.answer(step.value));
      for (const q of step.value.wakes) await this.query(INSERT_NOTIFY_SQL, [queueWakeChannel(q), now]);
      return step.value.node;
    });
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    return this.insertJob('tx.outboxEnqueue', outboxEnqueueInput(this.core, outbox, payload, opts));
  }

  /** Internal to the package: the workflows' tables in the caller's transaction. */
  get [WORKFLOW_SQL](): WorkflowSql {
    return sqliteWorkflowSql((sql, params) =>
      this.guard('tx.workflows', async () => (await this.query(sql, params)).records),
    );
  }

  async publish(stream: string, payload: unknown): Promise<number> {
    return this.insertEvent('tx.publish', publishInput(this.core, stream, payload));
  }

  async publishWithKey(stream: string, key: string, payload: unknown): Promise<number> {
    return this.insertEvent('tx.publishWithKey', publishWithKeyInput(this.core, stream, key, payload));
  }

  async notify(channel: string, payload?: string): Promise<void> {
    const c = notifyInput(channel, payload);
    await this.guard('tx.notify', async () => {
      await this.query(INSERT_NOTIFY_SQL, [c, await this.now()]);
    });
  }

  async saveOffset(stream: string, consumer: string, offset: number): Promise<boolean> {
    const i = saveOffsetInput(stream, consumer, offset);
    if (i.offset <= 0) return this.guard('tx.saveOffset', async () => false);
    return this.guard(
      'tx.saveOffset',
      async () => (await this.query(SAVE_OFFSET, [i.stream, i.consumer, i.offset])).affected > 0,
    );
  }

  async inboxClaim(inbox: string, messageId: string): Promise<InboxClaim> {
    const i = inboxClaimInput(inbox, messageId);
    return this.atomically('tx.inboxClaim', async () => {
      const now = await this.now();
      const claimed = (await this.query(CLAIM_INBOX, [i.inbox, i.messageId, now, now])).records.length > 0;
      if (claimed) return 'claimed';
      return claimAnswer(
        false,
        (await this.query(GET_INBOX, [i.inbox, i.messageId])).records[0]?.state as string | undefined,
      );
    });
  }

  /**
   * Refuses an ORM connection on another database than the store's `storePath` (null: the store is
   * in memory, which no other connection reaches): alkstore's rows would land in that other file, or
   * its first statement would fail there on a missing table. Compares the connection's main file
   * (`pragma_database_list`) with the store's, both with symbolic links resolved. A runner that
   * answers no main file (not a SQLite connection) is left to its first statement.
   */
  async assertSameFile(storePath: string | null): Promise<void> {
    const conn = connectionKeyOf(this.runner);
    const store = storePath === null ? null : canonical(storePath);
    if (conn !== null && store !== null && sameFile.get(conn) === store) return;
    const rows = await this.guard('joinTransaction', async () => (await this.query(MAIN_FILE, [])).records);
    const file = rows[0]?.file;
    if (typeof file !== 'string') return;
    const theirs = file === '' ? null : canonical(file);
    if (store !== null && theirs === store) {
      if (conn !== null) sameFile.set(conn, store);
      return;
    }
    const where = theirs === null ? 'an in-memory database' : `the SQLite file ${theirs}`;
    throw new InvalidOption(
      'joinTransaction(open)',
      store === null
        ? `joined a transaction on ${where}, but the store is in memory (:memory:), which no other connection can ` +
            `reach, so nothing was written: open the store on a file and your ORM's connection on that same file`
        : `joined a transaction on ${where}, but the store is on ${store}, so one transaction cannot cover both ` +
            `and nothing was written: open your ORM's connection on the store's file ${store} (or the store on the ` +
            `ORM's file)`,
    );
  }

  /**
   * Takes SQLite's write lock on the caller's connection now, at the start of
   * the transaction (a write that changes nothing still takes it): a
   * transaction that read first and wrote later could otherwise fail with
   * SQLITE_BUSY once another connection committed in between.
   */
  async takeWriteLock(): Promise<void> {
    await this.guard('joinTransaction', async () => {
      await this.query(TAKE_WRITE_LOCK, []);
    });
  }

  /** The key rules of queue-ops `insertPlan`, run through the caller's connection (which holds the write lock once it wrote). */
  private insertJob(op: string, i: EnqueueInput): Promise<number> {
    return this.atomically(op, async () => {
      const now = await this.now();
      const plan = insertPlan(i.queue, [i.text], i.stamp, now);
      let step = plan.next();
      while (!step.done) step = plan.next((await this.answer(step.value)) as StepAnswer);
      if (step.value.wake) await this.query(INSERT_NOTIFY_SQL, [queueWakeChannel(i.queue), now]);
      return step.value.ids[0]!;
    });
  }

  /** Runs one plan statement through the caller's connection and gives back what the plan expects. */
  private async answer(s: FlowStep): Promise<FlowAnswer> {
    if (s.kind === 'insert') return Number((await this.query(`${INSERT_JOB} RETURNING id`, s.params)).records[0]!.id);
    if (s.kind === 'get') return (await this.query(s.sql, s.params)).records[0];
    if (s.kind === 'all') return (await this.query(s.sql, s.params)).records;
    await this.query(s.sql, s.params);
    return undefined;
  }

  private async insertEvent(op: string, i: PublishInput): Promise<number> {
    return this.atomically(op, async () => {
      const now = await this.now();
      const seq = Number((await this.query(NEXT_SEQ, [i.stream])).records[0].last_seq);
      await this.query(INSERT_EVENT, [i.stream, seq, i.key, i.text, now]);
      await this.query(INSERT_NOTIFY_SQL, [streamWakeChannel(i.stream), now]);
      return seq;
    });
  }

  /** A multi-statement op in its own savepoint: one that fails halfway leaves nothing of itself in the caller's transaction. */
  private atomically<T>(op: string, fn: () => Promise<T>): Promise<T> {
    return this.guard(op, async () => {
      await this.query('SAVEPOINT alkstore_op', []);
      let value: T;
      try {
        value = await fn();
      } catch (err) {
        await this.query('ROLLBACK TO alkstore_op', []);
        await this.query('RELEASE alkstore_op', []);
        throw err;
      }
      await this.query('RELEASE alkstore_op', []);
      return value;
    });
  }

  private async guard<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.assertOpen();
    assertActiveRunner(this.runner);
    try {
      return await fn();
    } catch (err) {
      throw asStoreError(op, err);
    }
  }

  private async now(): Promise<number> {
    const { records } = await this.query(`${NOW_SQL} AS now`, []);
    return Number(records[0].now);
  }

  /** TypeORM's structured result (`records` / `affected`); a plain array result is taken as records. */
  private async query(sql: string, params: unknown[]): Promise<Rows> {
    const res = (await this.runner.query(sql, params, true)) as { records?: unknown; affected?: unknown } | unknown[];
    if (Array.isArray(res)) return { records: res as Record<string, unknown>[], affected: 0 };
    return {
      records: Array.isArray(res?.records) ? (res.records as Record<string, unknown>[]) : [],
      affected: typeof res?.affected === 'number' ? res.affected : 0,
    };
  }
}
