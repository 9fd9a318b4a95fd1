import type { InboxClaim, InboxEntry } from '../../contract/inbox.js';
import type { DeliveryReceipt, StoredReceipt } from '../../contract/types.js';
import { validateKey, validateName } from '../../contract/validate.js';
import type { InboxDriver } from '../../internal/inbox-handle.js';
import type { ReceiptDriver, ReceiptRows } from '../../internal/outbox-handle.js';
import type { SqliteConn } from './connection.js';
import {
  CLAIM_INBOX,
  FAIL_INBOX,
  GET_INBOX,
  GET_RECEIPT,
  PRUNE_INBOX,
  PRUNE_RECEIPTS,
  PUT_RECEIPT,
} from './inbox.sql.js';
import type { WriteCtx } from './writer.js';

interface EntryRow {
  inbox: string;
  message_id: string;
  state: InboxEntry['state'];
  attempts: number;
  received_at: number;
  done_at: number | null;
  last_error: string | null;
}

/** Validates the arguments of `tx.inboxClaim` (before any I/O). */
export function inboxClaimInput(inbox: unknown, messageId: unknown): { inbox: string; messageId: string } {
  return { inbox: validateName('inbox', inbox), messageId: validateKey('messageId', messageId) };
}

/** Maps the claim statement's result (and, with none, the row's state) to the answer. */
export function claimAnswer(claimed: boolean, state: string | undefined): InboxClaim {
  if (claimed) return 'claimed';
  return state === 'dead' ? 'dead' : 'duplicate';
}

/** `tx.inboxClaim` inside the write transaction an engine-owned handle holds. */
export function claimInboxIn(ctx: WriteCtx, inbox: string, messageId: string): InboxClaim {
  const claimed = ctx.conn.stmt(CLAIM_INBOX).get(inbox, messageId, ctx.now, ctx.now) !== undefined;
  if (claimed) return 'claimed';
  return claimAnswer(false, (ctx.conn.stmt(GET_INBOX).get(inbox, messageId) as EntryRow | undefined)?.state);
}

function entry(row: EntryRow | undefined): InboxEntry | null {
  if (!row) return null;
  return Object.freeze({
    inbox: row.inbox,
    messageId: row.message_id,
    state: row.state,
    attempts: row.attempts,
    receivedAt: row.received_at,
    doneAt: row.done_at,
    lastError: row.last_error,
  });
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
      read('inbox.get', (conn) => entry(conn.stmt(GET_INBOX).get(inbox, messageId) as EntryRow | undefined)),
    inboxPrune: (inbox, olderThanMs) =>
      write('inbox.prune', (ctx) => ctx.conn.stmt(PRUNE_INBOX).run(inbox, ctx.now - olderThanMs).changes),
    putReceipts: (outbox, rows) => write('outbox.recordReceipts', (ctx) => putReceiptRows(ctx, outbox, rows)),
    getReceipt: (outbox, messageId) =>
      read('outbox.receipt', (conn): StoredReceipt | null => {
        const row = conn.stmt(GET_RECEIPT).get(outbox, messageId) as
          { receipt: string; delivered_at: number } | undefined;
        if (!row) return null;
        return Object.freeze({
          outbox,
          messageId,
          receipt: JSON.parse(row.receipt) as DeliveryReceipt,
          deliveredAt: row.delivered_at,
        });
      }),
    pruneReceipts: (outbox, olderThanMs) =>
      write('outbox.pruneReceipts', (ctx) => ctx.conn.stmt(PRUNE_RECEIPTS).run(outbox, ctx.now - olderThanMs).changes),
  };
}
