import type { InboxEntry } from '../../contract/inbox.js';
import type { DeliveryReceipt, StoredReceipt } from '../../contract/types.js';
import { validateKey, validateName } from '../../contract/validate.js';
import { num, numOrNull } from './rows.js';

// Inboxes and outbox receipts, the part both engines share: the checks of `tx.inboxClaim` and the
// rows as the API returns them. The engines' inbox.ts hold the statements.

/** An inbox row, with `I` the engine's int8 type. */
export interface InboxRow<I> {
  inbox: string;
  message_id: string;
  state: InboxEntry['state'];
  attempts: number;
  received_at: I;
  done_at: I | null;
  last_error: string | null;
}

/** Validates the arguments of `tx.inboxClaim` (before any I/O). */
export function inboxClaimInput(inbox: unknown, messageId: unknown): { inbox: string; messageId: string } {
  return { inbox: validateName('inbox', inbox), messageId: validateKey('messageId', messageId) };
}

/** An inbox row as `inboxGet` returns it (null: none). */
export function inboxEntry(row: InboxRow<number | string> | undefined): InboxEntry | null {
  if (!row) return null;
  return Object.freeze({
    inbox: row.inbox,
    messageId: row.message_id,
    state: row.state,
    attempts: num(row.attempts),
    receivedAt: num(row.received_at),
    doneAt: numOrNull(row.done_at),
    lastError: row.last_error,
  });
}

/** An outbox's stored receipt of `messageId` as `getReceipt` returns it (null: none). */
export function storedReceipt(
  outbox: string,
  messageId: number,
  row: { receipt: string; delivered_at: number | string } | undefined,
): StoredReceipt | null {
  if (!row) return null;
  return Object.freeze({
    outbox,
    messageId,
    receipt: JSON.parse(row.receipt) as DeliveryReceipt,
    deliveredAt: num(row.delivered_at),
  });
}
