import type { InboxClaim, InboxEntry, InboxFailure } from '../../contract/inbox.js';
import type { StoredReceipt } from '../../contract/types.js';
import { inboxClaimInput, inboxEntry, storedReceipt, type InboxRow } from '../shared/inbox.js';
import type { InboxDriver } from '../../internal/inbox-handle.js';
import type { ReceiptDriver } from '../../internal/outbox-handle.js';
import type { PgContext } from './context.js';
import type { Executor } from './connection.js';

type EntryRow = InboxRow<string>;

/** `tx.inboxClaim` through a transaction's executor. */
export async function claimInbox(
  ctx: PgContext,
  exec: Executor,
  inbox: string,
  messageId: string,
): Promise<InboxClaim> {
  const i = inboxClaimInput(inbox, messageId);
  const r = await exec.run<{ r: InboxClaim }>(ctx.sql.inbox.claim, [i.inbox, i.messageId]);
  return r.rows[0]?.r ?? 'duplicate';
}

/** The store-level inbox and receipt operations (autocommit statements on the pool). */
export function postgresInboxDriver(ctx: PgContext): InboxDriver & ReceiptDriver {
  const run = <R>(sql: Parameters<Executor['run']>[0], values: readonly unknown[]) => {
    ctx.guard();
    return ctx.exec.run<R>(sql, values);
  };
  const q = ctx.sql.inbox;
  return {
    async inboxFail(inbox, messageId, error, maxAttempts): Promise<InboxFailure> {
      const r = await run<{ state: string }>(q.fail, [inbox, messageId, error, maxAttempts]);
      const state = r.rows[0]?.state ?? (await run<EntryRow>(q.get, [inbox, messageId])).rows[0]?.state;
      return state === 'dead' ? 'dead' : 'retry';
    },
    async inboxGet(inbox, messageId): Promise<InboxEntry | null> {
      return inboxEntry((await run<EntryRow>(q.get, [inbox, messageId])).rows[0]);
    },
    async inboxPrune(inbox, olderThanMs): Promise<number> {
      return (await run(q.prune, [inbox, olderThanMs])).rowCount;
    },
    async putReceipts(outbox, rows): Promise<void> {
      await run(q.putReceipts, [outbox, rows.map((r) => r.messageId), rows.map((r) => r.receiptText)]);
    },
    async getReceipt(outbox, messageId): Promise<StoredReceipt | null> {
      const r = await run<{ receipt: string; delivered_at: string }>(q.getReceipt, [outbox, messageId]);
      return storedReceipt(outbox, messageId, r.rows[0]);
    },
    async pruneReceipts(outbox, olderThanMs): Promise<number> {
      return (await run(q.pruneReceipts, [outbox, olderThanMs])).rowCount;
    },
  };
}
