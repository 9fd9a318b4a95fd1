import { InvalidArgument } from '../contract/errors.js';
import type { JobEdit, ReceiptPageOpts, WorkerInfo } from '../contract/admin.js';
import { encodePayload } from '../contract/codec.js';
import type { DeliveryReceipt, StoredReceipt } from '../contract/types.js';
import { readCursor } from './admin-paging.js';
import { optionalObject, requireInstantMs, requireInt, requirePriority, validateName } from '../contract/validate.js';

/** `editJob` input after validation: what the engine binds (null: unchanged). */
export interface ResolvedEdit {
  readonly payloadText: string | null;
  readonly priority: number | null;
  readonly runAt: number | null;
}

/** Checks an `editJob` change before any I/O: at least one field, each as at enqueue. */
export function resolveJobEdit(edit: JobEdit | undefined, maxPayloadBytes: number): ResolvedEdit {
  const o = optionalObject<JobEdit>('edit', edit);
  if (!o || (!('payload' in o) && o.priority === undefined && o.runAt === undefined)) {
    throw new InvalidArgument('edit', 'must change at least one of payload, priority, runAt');
  }
  return {
    payloadText: 'payload' in o ? encodePayload(o.payload, 'edit.payload', maxPayloadBytes) : null,
    priority: o.priority === undefined ? null : requirePriority('edit.priority', o.priority),
    runAt: o.runAt === undefined ? null : requireInstantMs('edit.runAt', o.runAt),
  };
}

/** `receipts` paging after validation: the keyset to continue below (`[deliveredAt, messageId]`), or null. */
export interface ResolvedReceiptPage {
  readonly outbox: string;
  readonly before: readonly [number, number] | null;
  readonly limit: number;
}

export function resolveReceiptPage(outbox: unknown, opts: ReceiptPageOpts | undefined): ResolvedReceiptPage {
  const name = validateName('outbox', outbox);
  const o = optionalObject<ReceiptPageOpts>('receipts options', opts);
  const limit = o?.limit === undefined ? 50 : requireInt('limit', o.limit, 1, 1000);
  let before: [number, number] | null = null;
  if (o?.cursor !== undefined) {
    const bad = new InvalidArgument('cursor', 'must be a cursor returned by receipts');
    const parsed = readCursor(o.cursor, 100, bad);
    if (!Array.isArray(parsed) || parsed.length !== 2 || !parsed.every((n) => Number.isSafeInteger(n))) throw bad;
    before = [parsed[0] as number, parsed[1] as number];
  }
  return { outbox: name, before, limit };
}

/** A receipt row as both engines read it (numbers already numbers). */
export interface ReceiptRow {
  readonly messageId: number;
  readonly receiptText: string;
  readonly deliveredAt: number;
}

/** The page from `limit + 1` rows, latest first. */
export function receiptPage(
  q: ResolvedReceiptPage,
  rows: readonly ReceiptRow[],
): { receipts: StoredReceipt[]; next: string | null } {
  const receipts = rows.slice(0, q.limit).map((r) =>
    Object.freeze({
      outbox: q.outbox,
      messageId: r.messageId,
      receipt: JSON.parse(r.receiptText) as DeliveryReceipt,
      deliveredAt: r.deliveredAt,
    }),
  );
  const last = receipts[receipts.length - 1];
  const next =
    rows.length > q.limit && last
      ? Buffer.from(JSON.stringify([last.deliveredAt, last.messageId]), 'utf8').toString('base64url')
      : null;
  return { receipts, next };
}

/** Rows of the workers query, grouped by worker id and queue. */
export interface WorkerRow {
  readonly workerId: string;
  readonly queue: string;
  readonly jobs: number;
  readonly low: number;
  readonly high: number;
}

export function toWorkers(rows: readonly WorkerRow[], now: number): WorkerInfo[] {
  return rows.map((r) => ({
    workerId: r.workerId,
    queue: r.queue,
    jobs: r.jobs,
    earliestDeadline: r.low,
    latestDeadline: r.high,
    lapsed: r.high <= now,
  }));
}
