import { Closed, TransactionTimeout } from '../../contract/errors.js';
import type { InboxClaim } from '../../contract/inbox.js';
import type { JobOpts } from '../../contract/options.js';
import type { TxHandle } from '../shared/tx.js';
import type { SqliteCore } from './context.js';
import { claimInboxIn, inboxClaimInput } from './inbox.js';
import { insertJobs } from './queue-ops.js';
import { publishEvent, saveConsumerOffset } from './stream.js';
import { dependsOnFlow, hasDependencies, type FlowJob, type FlowNode } from '../../contract/flows.js';
import { insertFlow } from './flows.js';
import {
  enqueueInput,
  flowInput,
  notifyInput,
  outboxEnqueueInput,
  publishInput,
  publishWithKeyInput,
  saveOffsetInput,
} from './tx-input.js';
import { asStoreError, WriteCtx, type AppHold, type Writer } from './writer.js';
import { WORKFLOW_SQL, type WorkflowSql } from '../../workflows/sql-seam.js';
import { runOn, sqliteWorkflowSql, sqliteWorkflowWrites } from './workflow-sql.js';

/**
 * A `withTx(fn)` handle: an open BEGIN IMMEDIATE on the store's write
 * connection, holding the store's write path until commit or rollback. Every
 * other write of this store waits for it (at most `lockWaitTimeoutMs`, then
 * it fails naming this transaction). A lease renewal that waits a quarter of
 * its lease for it rolls it back (`TransactionTimeout`). Each operation runs
 * in its own savepoint: one that fails leaves nothing of itself behind.
 */
export class SqliteTxHandle implements TxHandle {
  private done = false;
  private revoked: TransactionTimeout | null = null;
  private readonly channels = new Set<string>();
  private hold: AppHold | null = null;
  private readonly openedAt = performance.now();

  constructor(
    private readonly core: SqliteCore,
    private readonly writer: Writer,
    private readonly onFinish: (h: SqliteTxHandle) => void,
    private readonly label: string,
  ) {}

  /** Takes the write path; the handle is usable once this resolves. */
  async open(): Promise<void> {
    this.hold = await this.writer.beginOpen(this.label, (leaseMs) => this.revoke(leaseMs));
  }

  get finished(): boolean {
    return this.done;
  }

  async enqueue(queue: string, payload: unknown, opts?: JobOpts): Promise<number> {
    if (hasDependencies(opts)) return (await this.enqueueFlow(queue, dependsOnFlow(payload, opts))).id;
    const i = enqueueInput(this.core, queue, payload, opts);
    return this.run('tx.enqueue', (ctx) => insertJobs(ctx, i.queue, [i.text], i.stamp)[0]);
  }

  async enqueueFlow(queue: string, flow: FlowJob): Promise<FlowNode> {
    const plan = flowInput(this.core, queue, flow);
    return this.run('tx.enqueueFlow', (ctx) => insertFlow(ctx, plan));
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const i = outboxEnqueueInput(this.core, outbox, payload, opts);
    return this.run('tx.outboxEnqueue', (ctx) => insertJobs(ctx, i.queue, [i.text], i.stamp)[0]);
  }

  async publish(stream: string, payload: unknown): Promise<number> {
    const i = publishInput(this.core, stream, payload);
    return this.run('tx.publish', (ctx) => publishEvent(ctx, i.stream, null, i.text));
  }

  async publishWithKey(stream: string, key: string, payload: unknown): Promise<number> {
    const i = publishWithKeyInput(this.core, stream, key, payload);
    return this.run('tx.publishWithKey', (ctx) => publishEvent(ctx, i.stream, i.key, i.text));
  }

  async notify(channel: string, payload?: string): Promise<void> {
    const c = notifyInput(channel, payload);
    this.run('tx.notify', (ctx) => ctx.wake(c));
  }

  async saveOffset(stream: string, consumer: string, offset: number): Promise<boolean> {
    const i = saveOffsetInput(stream, consumer, offset);
    return this.run('tx.saveOffset', (ctx) => saveConsumerOffset(ctx, i.stream, i.consumer, i.offset));
  }

  async inboxClaim(inbox: string, messageId: string): Promise<InboxClaim> {
    const i = inboxClaimInput(inbox, messageId);
    return this.run('tx.inboxClaim', (ctx) => claimInboxIn(ctx, i.inbox, i.messageId));
  }

  /** Internal to the package: the workflows' tables in this transaction. */
  get [WORKFLOW_SQL](): WorkflowSql {
    return {
      ...sqliteWorkflowSql(async (sql, params) => this.run('tx.workflows', (ctx) => runOn(ctx.conn, sql, params))),
      ...sqliteWorkflowWrites(this.core, async (op, fn) => this.run(op, fn)),
    };
  }

  async commit(): Promise<void> {
    this.assertActive();
    this.done = true;
    this.onFinish(this);
    this.writer.commitOpen(new WriteCtx(this.writer.conn, this.channels), this.hold!);
  }

  /** Rolls back; after a `TransactionTimeout` it resolves (the rollback already happened). */
  async rollback(): Promise<void> {
    if (this.revoked !== null && this.done) return;
    this.assertActive();
    this.done = true;
    this.onFinish(this);
    this.writer.rollbackOpen(this.hold!);
  }

  /** Store close: roll back and refuse further use. */
  abandon(): void {
    if (!this.done) void this.rollback();
  }

  /** A lease renewal waited a quarter of its lease: roll back now, hand the write path over, refuse every later call. */
  private revoke(leaseMs: number): void {
    if (this.done) return;
    this.revoked = new TransactionTimeout(this.label, performance.now() - this.openedAt, leaseMs);
    this.done = true;
    this.onFinish(this);
    this.writer.rollbackOpen(this.hold!);
  }

  private assertActive(): void {
    if (this.revoked !== null) throw this.revoked;
    if (this.done) throw new Closed('transaction');
  }

  private run<T>(op: string, fn: (ctx: WriteCtx) => T): T {
    this.assertActive();
    const conn = this.writer.conn;
    conn.stmt('SAVEPOINT alkstore_op').run();
    try {
      // A fresh clock reading per op: a long transaction does not freeze time. Its wakes join the
      // transaction's only if it succeeds.
      const mine = new Set<string>();
      const value = fn(new WriteCtx(conn, mine));
      conn.stmt('RELEASE alkstore_op').run();
      for (const c of mine) this.channels.add(c);
      return value;
    } catch (err) {
      conn.stmt('ROLLBACK TO alkstore_op').run();
      conn.stmt('RELEASE alkstore_op').run();
      throw asStoreError(op, err);
    }
  }
}
