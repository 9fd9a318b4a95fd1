import type { ModuleRef } from '@nestjs/core';
import { InvalidOption } from '../../contract/errors.js';
import type { TxOpen } from '../../contract/types.js';
import { ModuleOrm } from '../orm/module-orm.js';
import type { InboxTransactionKind } from './brokers-options.interface.js';

/** Checks an `@InboxHandler` / `@InboxEvent` `transaction` option, naming `at`. */
export function checkTransactionKind(at: string, kind: unknown): InboxTransactionKind {
  if (kind === undefined) return 'store';
  if (kind === 'store' || kind === 'orm') return kind;
  throw new InvalidOption(
    `${at} transaction`,
    `must be 'store' or 'orm' (the module's orm option, TypeORM by default), got ${JSON.stringify(kind)}`,
  );
}

/** The `transaction` of an inbox consumer whose claim and effect share the transaction `kind` names (undefined: the store's own). */
export function inboxTransaction(kind: InboxTransactionKind, moduleRef: ModuleRef): TxOpen<unknown> | undefined {
  return kind === 'store' ? undefined : moduleRef.get(ModuleOrm, { strict: false }).open;
}
