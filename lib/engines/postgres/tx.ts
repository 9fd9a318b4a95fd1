import { Closed, Database } from '../../contract/errors.js';
import { outboxQueueName } from '../../contract/names.js';
import { validateKey, validateName } from '../../contract/validate.js';
import { OUTBOX_QUEUE_OPTS, type JobOpts } from '../../contract/options.js';
import type { InboxClaim } from '../../contract/inbox.js';
import type { TxOps } from '../../contract/types.js';
import type { TxHandle } from '../shared/tx.js';
import { dependsOnFlow, hasDependencies, planFlow, type FlowJob, type FlowNode } from '../../contract/flows.js';
import { insertFlow } from './flows.js';
import { enqueueJob, notifyChannel, publishEvent, saveConsumerOffset, type PgContext } from './context.js';
import type { ClientExecutor, Executor } from './connection.js';
import { claimInbox } from './inbox.js';
import { TxWakes } from './notify/own-wakes.js';
import { WORKFLOW_SQL, type WorkflowSql } from '../../workflows/sql-seam.js';
import { postgresWorkflowSql } from './workflow-sql.js';

/**
 * The commit-atomic operations over one transaction's executor. Wakes are
 * `pg_notify` calls in the same transaction, so they fire on commit only; in
 * an engine-owned transaction this store's own receivers are also woken
 * in-process once COMMIT has resolved (`TxWakes`).
 */
export class PostgresTxOps implements TxOps {
  constructor(
    protected readonly ctx: PgContext,
    protected readonly exec: Executor,
  ) {}

  protected check(): void {
    this.ctx.guard();
  }

  /** Internal to the package: the workflows' tables in this transaction. */
  get [WORKFLOW_SQL](): WorkflowSql {
    return postgresWorkflowSql(this.ctx, this.exec, () => this.check());
  }

  async enqueue(queue: string, payload: unknown, opts?: JobOpts): Promise<number> {
    if (hasDependencies(opts)) return (await this.enqueueFlow(queue, dependsOnFlow(payload, opts))).id;
    this.check();
    validateName('queue', queue);
    return enqueueJob(this.ctx, this.exec, queue, this.ctx.queueOpts(queue), payload, opts);
  }

  async enqueueFlow(queue: string, flow: FlowJob): Promise<FlowNode> {
    this.check();
    const plan = planFlow(flow, validateName('queue', queue), {
      queueOpts: (q) => this.ctx.queueOpts(q),
      enqueueHeaders: this.ctx.enqueueHeaders,
      maxPayloadBytes: this.ctx.maxPayloadBytes,
    });
    return insertFlow(this.ctx, this.exec, plan);
  }

  async publish(stream: string, payload: unknown): Promise<number> {
    this.check();
    validateName('stream', stream);
    return publishEvent(this.ctx, this.exec, stream, null, payload);
  }

  async publishWithKey(stream: string, key: string, payload: unknown): Promise<number> {
    this.check();
    validateName('stream', stream);
    validateKey('key', key);
    return publishEvent(this.ctx, this.exec, stream, key, payload);
  }

  async notify(channel: string, payload?: string): Promise<void> {
    this.check();
    return notifyChannel(this.ctx, this.exec, channel, payload);
  }

  async saveOffset(stream: string, consumer: string, offset: number): Promise<boolean> {
    this.check();
    return saveConsumerOffset(this.ctx, this.exec, stream, consumer, offset);
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    this.check();
    const queue = outboxQueueName(outbox);
    return enqueueJob(this.ctx, this.exec, queue, this.ctx.queueOpts(queue, OUTBOX_QUEUE_OPTS), payload, opts);
  }

  async inboxClaim(inbox: string, messageId: string): Promise<InboxClaim> {
    this.check();
    return claimInbox(this.ctx, this.exec, inbox, messageId);
  }
}

/** An engine-owned transaction on one pooled client. */
export class PostgresTxHandle extends PostgresTxOps implements TxHandle {
  finished = false;

  constructor(
    ctx: PgContext,
    private readonly clientExec: ClientExecutor,
    private readonly onEnd: (handle: PostgresTxHandle) => void,
  ) {
    super(ctx, clientExec);
  }

  private get wakes(): TxWakes | null {
    return this.clientExec.wakes instanceof TxWakes ? this.clientExec.wakes : null;
  }

  protected override check(): void {
    if (this.finished) throw new Closed('transaction');
    super.check();
  }

  async commit(): Promise<void> {
    await this.end('COMMIT');
  }

  async rollback(): Promise<void> {
    await this.end('ROLLBACK');
  }

  private async end(command: 'COMMIT' | 'ROLLBACK'): Promise<void> {
    if (this.finished) throw new Closed('transaction');
    this.finished = true;
    const client = this.clientExec.client;
    try {
      const r = await client.query(command);
      client.release();
      // COMMIT of a transaction that had failed answers ROLLBACK: nothing was committed, nothing wakes.
      if (command === 'COMMIT' && r.command === 'COMMIT') this.wakes?.commit();
      else this.wakes?.abandon();
    } catch (err) {
      this.wakes?.abandon();
      // A connection that failed mid-COMMIT/ROLLBACK is in an unknown state: destroy it.
      client.release(err instanceof Error ? err : true);
      throw new Database(`transaction ${command}`, err);
    } finally {
      this.onEnd(this);
    }
  }
}
