import type { ClaimRef, ReceiptWrite } from '../shared/queue-driver.js';
import { endedInLimited } from './limits.js';
import type { WriteCtx } from './writer.js';

// The outbox's ack with receipts as two statements per batch (instead of two per row), inside one write.

/**
 * Deletes the claimed rows of @items (JSON `[[id, token], …]`), each fenced as a single ack is: its own
 * token, still processing, lease not passed. Only for jobs without an ordering key (nothing to promote).
 */
const ACK_PLAIN_ROWS = `DELETE FROM __alkstore_jobs
  WHERE (id, claim_token) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@items))
    AND state = 'processing' AND claimed_until > @now`;

/** Upserts the receipts of @rows (JSON `[[messageId, receiptText], …]`) of @outbox. */
const PUT_RECEIPT_ROWS = `INSERT INTO __alkstore_outbox_receipts (outbox, message_id, receipt, delivered_at)
  SELECT @outbox, json_extract(value, '$[0]'), json_extract(value, '$[1]'), @now FROM json_each(@rows) WHERE true
  ON CONFLICT (outbox, message_id) DO UPDATE SET receipt = excluded.receipt, delivered_at = excluded.delivered_at`;

/**
 * Inside a write: upserts every receipt (whatever the fence says, as the per-row path does) and acks the
 * jobs, none of which has an ordering key (`plain`). Returns how many jobs it acked.
 */
export function ackDeliveredPlain(
  ctx: WriteCtx,
  queue: string,
  jobs: readonly ClaimRef[],
  receipts: ReceiptWrite,
): number {
  ctx.conn.stmt(PUT_RECEIPT_ROWS).run({
    outbox: receipts.outbox,
    rows: JSON.stringify(receipts.rows.map((r) => [r.messageId, r.receiptText])),
    now: ctx.now,
  });
  const n = ctx.conn
    .stmt(ACK_PLAIN_ROWS)
    .run({ items: JSON.stringify(jobs.map((j) => [j.id, j.claimToken])), now: ctx.now }).changes;
  if (n > 0) endedInLimited(ctx, queue);
  return n;
}
