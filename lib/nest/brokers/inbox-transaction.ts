import type { ModuleRef } from '@nestjs/core';
import { InvalidOption } from '../../contract/errors.js';
import type { Store, TxOps } from '../../contract/types.js';
import type { InboxTransaction } from '../../inbox/inbox-message.js';
import { OrmTransactions } from '../orm/orm-transactions.service.js';
import { AlkstoreTransactions } from '../typeorm/alkstore-transactions.service.js';
import type { InboxTransactionKind } from './brokers-options.interface.js';

/** Checks an `@InboxHandler` / `@InboxEvent` `transaction` option, naming `at`. */
export function checkTransactionKind(at: string, kind: unknown): InboxTransactionKind {
  if (kind === undefined) return 'store';
  if (kind === 'store' || kind === 'typeorm' || kind === 'orm') return kind;
  throw new InvalidOption(`${at} transaction`, `must be 'store', 'typeorm' or 'orm', got ${JSON.stringify(kind)}`);
}

/** The transaction an inbox claim and its effect share, opened the way `kind` says. */
export function inboxTransaction(kind: InboxTransactionKind, store: Store, moduleRef: ModuleRef): InboxTransaction {
  if (kind === 'store') return (fn) => store.withTx((tx) => fn(tx));
  if (kind === 'typeorm') {
    const typeorm = moduleRef.get(AlkstoreTransactions, { strict: false });
    return (fn) => typeorm.run((tx: TxOps, em) => fn(tx, em));
  }
  const orm = moduleRef.get(OrmTransactions, { strict: false });
  return (fn) => orm.run((tx: TxOps, handle) => fn(tx, handle));
}
