// The consumer inbox handle.
import type { InboxClaim, InboxEntry, InboxFailure, InboxSettings } from '../inbox.js';
import type { TxOps } from './tx.js';

/**
 * A consumer inbox (SPEC §11): makes a consumer's effects effectively-once by
 * claiming each message id inside the effect's own transaction.
 *
 * ```ts
 * const inbox = store.inbox('billing');
 * await store.withTx(async (tx) => {
 *   if ((await inbox.claim(tx, envelope.messageId)) !== 'claimed') return; // seen: skip, then ack
 *   await tx.enqueue('invoices', payload);                                  // the effect
 * });
 * ```
 */
export interface Inbox {
  readonly name: string;
  /** Resolved options, with the retention floor they imply. */
  readonly settings: InboxSettings;
  /** Same as `tx.inboxClaim(name, messageId)`; `tx` is the `tx` of `store.withTx(fn)` or of `store.joinTransaction(open, fn)`. */
  claim(tx: TxOps, messageId: string): Promise<InboxClaim>;
  /**
   * Records a failed attempt after the effect's transaction rolled back (its
   * own write): `'retry'` below `maxAttempts`, else `'dead'` (later claims
   * answer `'dead'`). A message already done stays done (`'retry'` is never
   * answered for it: the answer is `'dead'` only when it is dead).
   */
  fail(messageId: string, error: unknown): Promise<InboxFailure>;
  get(messageId: string): Promise<InboxEntry | null>;
  /**
   * Deletes done entries older than `olderThanMs` (default: the retention
   * floor). A value below the floor is refused with `InvalidOption` naming both.
   */
  prune(olderThanMs?: number): Promise<number>;
}
