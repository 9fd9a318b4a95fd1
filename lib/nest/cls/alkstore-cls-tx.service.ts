import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { TransactionHost } from '@nestjs-cls/transactional';
import { InvalidOption } from '../../contract/errors.js';
import { loadPeer } from '../../internal/load-peer.js';
import type { JobOpts } from '../../contract/options.js';
import type { TxOps } from '../../contract/types.js';
import { Store } from '../store.token.js';
import { clsTxOps } from './alkstore-cls-adapter.js';

/**
 * The opt-in handle for `@nestjs-cls/transactional`: inside a `@Transactional()` method its writes
 * join the active CLS transaction (opened through {@link AlkstoreTransactionalAdapter}) and commit or
 * roll back with it; outside one they are the store's own writes (`store.queue(name).enqueue`,
 * `store.outboxEnqueue`, `store.notify`, `stream.publish`).
 *
 * `@nestjs-cls/transactional` is loaded when the module initialises, so importing
 * `nestjs-alkstore/nest` never needs it.
 */
@Injectable()
export class AlkstoreClsTx implements OnModuleInit {
  private txHost: TransactionHost | null = null;

  constructor(
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    @Inject(Store) private readonly store: Store,
  ) {}

  async onModuleInit(): Promise<void> {
    const cls = await loadPeer('@nestjs-cls/transactional', () => import('@nestjs-cls/transactional'), 'AlkstoreClsTx');
    this.txHost = this.moduleRef.get(cls.TransactionHost, { strict: false });
  }

  /** The joined operations of the active CLS transaction, or null outside one. */
  get tx(): TxOps | null {
    const host = this.txHost;
    if (host === null)
      throw new InvalidOption(
        'AlkstoreClsTx',
        'is used before its module initialised: call it once the app has started',
      );
    if (!host.isTransactionActive()) return null;
    const ops = clsTxOps.get(host.tx as object);
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
