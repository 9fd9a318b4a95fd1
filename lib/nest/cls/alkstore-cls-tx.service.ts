import { Inject, Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import { InvalidOption } from '../../contract/errors.js';
import type { JobOpts } from '../../contract/options.js';
import type { TxOps } from '../../contract/types.js';
import { Store } from '../store.token.js';
import { clsTxOps } from './alkstore-cls-adapter.js';

/**
 * The opt-in handle for `@nestjs-cls/transactional`: inside a `@Transactional()` method its writes
 * join the active CLS transaction (opened through {@link AlkstoreTransactionalAdapter}) and commit or
 * roll back with it; outside one they are the store's own writes (`store.queue(name).enqueue`,
 * `store.outboxEnqueue`, `store.notify`, `stream.publish`).
 */
@Injectable()
export class AlkstoreClsTx {
  constructor(
    @Inject(TransactionHost) private readonly txHost: TransactionHost,
    @Inject(Store) private readonly store: Store,
  ) {}

  /** The joined operations of the active CLS transaction, or null outside one. */
  get tx(): TxOps | null {
    if (!this.txHost.isTransactionActive()) return null;
    const ops = clsTxOps.get(this.txHost.tx as object);
    if (!ops) {
      throw new InvalidOption(
        'ClsPluginTransactional adapter',
        'opened the active transaction without alkstore: wrap your ORM adapter as new AlkstoreTransactionalAdapter({ ' +
          'adapter: new TransactionalAdapterTypeOrm(…) }) (or the Prisma or Drizzle adapter) so AlkstoreClsTx can ' +
          'join it',
      );
    }
    return ops;
  }

  async enqueue(queue: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const tx = this.tx;
    return tx ? tx.enqueue(queue, payload, opts) : this.store.queue(queue).enqueue(payload, opts);
  }

  async outboxEnqueue(outbox: string, payload: unknown, opts?: JobOpts): Promise<number> {
    const tx = this.tx;
    return tx ? tx.outboxEnqueue(outbox, payload, opts) : this.store.outboxEnqueue(outbox, payload, opts);
  }

  async notify(channel: string, payload?: string): Promise<void> {
    const tx = this.tx;
    return tx ? tx.notify(channel, payload) : this.store.notify(channel, payload);
  }

  async publish(stream: string, payload: unknown): Promise<number> {
    const tx = this.tx;
    return tx ? tx.publish(stream, payload) : this.store.stream(stream).publish(payload);
  }
}
