import type { InboxClaim } from '../../contract/inbox.js';
import type { StoredReceipt } from '../../contract/types.js';
import { inboxClaimInput, inboxEntry, storedReceipt, type InboxRow } from '../shared/inbox.js';
import type { InboxDriver } from '../../internal/inbox-handle.js';
import type { ReceiptDriver, ReceiptRows } from '../../internal/outbox-handle.js';
import type { SqliteConn } from './connection.js';
import {
  CLAIM_INBOX,
  CLAIM_NEW_INBOX,
  FAIL_INBOX,
  GET_INBOX,
  GET_RECEIPT,
  PRUNE_INBOX,
  PRUNE_RECEIPTS,
  PUT_RECEIPT,
} from './inbox.sql.js';
import type { WriteCtx } from './writer.js';

type EntryRow = InboxRow<number>;

export { inboxClaimInput };

/** Maps the claim statement's result (and, with none, the row's state) to the answer. */
export function claimAnswer(claimed: boolean, state: string | undefined): InboxClaim {
  if (claimed) return 'claimed';
  return state === 'dead' ? 'dead' : 'duplicate';
}

/** `tx.inboxClaim` inside the write transaction an engine-owned handle holds. */
export function claimInboxIn(ctx: WriteCtx, inbox: string, messageId: string): InboxClaim {
  // A new message (every workflow guard, most messages) is one plain insert; a row already there (done,
  // dead, or failed and taken over) goes through the upsert. Both run in this write's transaction.
  if (ctx.conn.stmt(CLAIM_NEW_INBOX).run(inbox, messageId, ctx.now, ctx.now).changes === 1) return 'claimed';
  const claimed = ctx.conn.stmt(CLAIM_INBOX).get(inbox, messageId, ctx.now, ctx.now) !== undefined;
  if (claimed) return 'claimed';
  return claimAnswer(false, (ctx.conn.stmt(GET_INBOX).get(inbox, messageId) as EntryRow | undefined)?.state);
}

/** Upserts an outbox's receipts inside a write (on its own, or with their acks: `ackBatch` with receipts). */
export function putReceiptRows(ctx: WriteCtx, outbox: string, rows: ReceiptRows): void {
  const put = ctx.conn.stmt(PUT_RECEIPT);
  for (const r of rows) put.run(outbox, r.messageId, r.receiptText, ctx.now);
}

/** The store-level inbox and receipt operations, each its own write or read. */
export function sqliteInboxDriver(
  write: <T>(op: string, fn: (ctx: WriteCtx) => T) => Promise<T>,
  read: <T>(op: string, fn: (conn: SqliteConn) => T) => Promise<T>,
): InboxDriver & ReceiptDriver {
  return {
    inboxFail: (inbox, messageId, error, maxAttempts) =>
      write('inbox.fail', (ctx) => {
        const row = ctx.conn.stmt(FAIL_INBOX).get(inbox, messageId, maxAttempts, ctx.now, error, maxAttempts) as
          { state: string } | undefined;
        const state = row?.state ?? (ctx.conn.stmt(GET_INBOX).get(inbox, messageId) as EntryRow | undefined)?.state;
        return state === 'dead' ? 'dead' : 'retry';
      }),
    inboxGet: (inbox, messageId) =>
      read('inbox.get', (conn) => inboxEntry(conn.stmt(GET_INBOX).get(inbox, messageId) as EntryRow | undefined)),
    inboxPrune: (inbox, olderThanMs) =>
      write('inbox.prune', (ctx) => ctx.conn.stmt(PRUNE_INBOX).run(inbox, ctx.now - olderThanMs).changes),
    putReceipts: (outbox, rows) => write('outbox.recordReceipts', (ctx) => putReceiptRows(ctx, outbox, rows)),
    getReceipt: (outbox, messageId) =>
      read('outbox.receipt', (conn): StoredReceipt | null => {
        const row = conn.stmt(GET_RECEIPT).get(outbox, messageId) as
          { receipt: string; delivered_at: number } | undefined;
        return storedReceipt(outbox, messageId, row);
      }),
    pruneReceipts: (outbox, olderThanMs) =>
      write('outbox.pruneReceipts', (ctx) => ctx.conn.stmt(PRUNE_RECEIPTS).run(outbox, ctx.now - olderThanMs).changes),
  };
}
