import { Closed } from '../../contract/errors.js';
import type { InboxClaim } from '../../contract/inbox.js';
import type { JobOpts } from '../../contract/options.js';
import type { TxHandle } from '../../contract/types.js';
import type { SqliteCore } from './core.js';
import { claimInboxIn, inboxClaimInput } from './inbox.js';
import { insertJobs } from './queue-ops.js';
import { publishEvent, saveConsumerOffset } from './stream.sql.js';
import { enqueueInput, notifyInput, outboxEnqueueInput, publishInput, publishWithKeyInput, saveOffsetInput } from './tx-input.js';
import { asStoreError, WriteCtx, type Writer } from './writer.js';

/**
 * A `beginTx()` handle: an open BEGIN IMMEDIATE on the store's write
 * connection, holding the store's write mutex until commit or rollback. Every
 * other write of this store waits for it, so calling a non-transactional store
 * write from inside an open handle deadlocks (like exhausting a pool of one).
 */
export class SqliteTxHandle implements TxHandle {
  private done = false;
  private readonly channels = new Set<string>();

  constructor(
    private readonly core: SqliteCore,
    private readonly writer: Writer,
    private readonly onFinish: (h: SqliteTxHandle) => void,
  ) {}

  get finished(): boolean {
    return this.done;
  }

  async enqueue(queue: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const i = enqueueInput(this.core, queue, payload, opts);
    return this.run('tx.enqueue', (ctx) => insertJobs(ctx, i.queue, [i.text], i.stamp)[0]);
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const i = outboxEnqueueInput(this.core, outbox, payload, opts);
    return this.run('tx.outboxEnqueue', (ctx) => insertJobs(ctx, i.queue, [i.text], i.stamp)[0]);
  }

  async publish(stream: string, payload: unknown): Promise<number> {
    const i = publishInput(stream, payload);
    return this.run('tx.publish', (ctx) => publishEvent(ctx, i.stream, null, i.text));
  }

  async publishWithKey(stream: string, key: string, payload: unknown): Promise<number> {
    const i = publishWithKeyInput(stream, key, payload);
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

  async commit(): Promise<void> {
    this.assertActive();
    this.done = true;
    this.onFinish(this);
    this.writer.commitOpen(new WriteCtx(this.writer.conn, this.channels));
  }

  async rollback(): Promise<void> {
    this.assertActive();
    this.done = true;
    this.onFinish(this);
    this.writer.rollbackOpen();
  }

  /** Store close: roll back and refuse further use. */
  abandon(): void {
    if (!this.done) void this.rollback();
  }

  private assertActive(): void {
    if (this.done) throw new Closed('transaction');
  }

  private run<T>(op: string, fn: (ctx: WriteCtx) => T): T {
    this.assertActive();
    try {
      // A fresh clock reading per op: a long transaction does not freeze time.
      return fn(new WriteCtx(this.writer.conn, this.channels));
    } catch (err) {
      throw asStoreError(op, err);
    }
  }
}
