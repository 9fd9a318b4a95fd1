import type { ClaimRef, ReceiptWrite } from '../shared/queue-driver.js';
import { ackPlainJobs } from './queue-ops.js';
import type { WriteCtx } from './writer.js';

// The outbox's ack with receipts as two statements per batch (instead of two per row), inside one write.

/** Upserts the receipts of @rows (JSON `[[messageId, receiptText], …]`) of @outbox. */
const PUT_RECEIPT_ROWS = `INSERT INTO __alkstore_outbox_receipts (outbox, message_id, receipt, delivered_at)
  SELECT @outbox, json_extract(value, '$[0]'), json_extract(value, '$[1]'), @now FROM json_each(@rows) WHERE true
  ON CONFLICT (outbox, message_id) DO UPDATE SET receipt = excluded.receipt, delivered_at = excluded.delivered_at`;

/**
 * Inside a write: upserts every receipt (whatever the fence says, as the per-row path does) and acks the
 * jobs, none of which has an ordering key (`plain`), each fenced as a single ack is (queue.sql.ts,
 * ACK_PLAIN_ROWS). Returns how many jobs it acked.
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
  return ackPlainJobs(ctx, queue, jobs);
}
