import { outboxQueueName } from '../contract/names.js';
import type { JobOpts, QueueOpts } from '../contract/options.js';
import { InvalidArgument } from '../contract/errors.js';
import type { DeliveryReceipt, Job, Outbox, Queue, StoredReceipt } from '../contract/types.js';
import { requireArray, requireDurationMs, requireFunction, requireJobId, validateKey } from '../contract/validate.js';
import { isPermanent } from './permanent.js';

/** Where an engine keeps the brokers' receipts of delivered outbox messages. */
export interface ReceiptDriver {
  putReceipts(outbox: string, rows: readonly { messageId: number; receiptText: string }[]): Promise<void>;
  getReceipt(outbox: string, messageId: number): Promise<StoredReceipt | null>;
  pruneReceipts(outbox: string, olderThanMs: number): Promise<number>;
}

/** Receipt rows of one write. */
export type ReceiptRows = readonly { readonly messageId: number; readonly receiptText: string }[];

/** The backing queue's one-write ack with receipts (the engines' queue handle, `QueueHandle.ackDelivered`). */
export interface DeliveredAcker {
  ackDelivered(jobs: readonly Pick<Job, 'id' | 'claimToken'>[], outbox: string, receipts: ReceiptRows): Promise<number>;
}

/** Largest stored receipt (JSON characters). */
const MAX_RECEIPT_CHARS = 4096;

function receiptText(i: number, r: unknown, at = 'receipts'): string {
  if (r === null || typeof r !== 'object' || Array.isArray(r) || typeof (r as DeliveryReceipt).broker !== 'string') {
    throw new InvalidArgument(`${at}[${i}].receipt`, 'must be an object with a string broker field');
  }
  for (const [k, v] of Object.entries(r)) {
    if (typeof v !== 'string' && typeof v !== 'boolean' && !(typeof v === 'number' && Number.isFinite(v))) {
      throw new InvalidArgument(
        `${at}[${i}].receipt.${k.slice(0, 64)}`,
        'must be a string, a finite number or a boolean',
      );
    }
  }
  const text = JSON.stringify(r);
  if (text.length > MAX_RECEIPT_CHARS)
    throw new InvalidArgument(
      `${at}[${i}].receipt`,
      `must encode to at most ${MAX_RECEIPT_CHARS} characters, got ${text.length}`,
    );
  return text;
}

/** Throws the InvalidArgument `Outbox.ackDelivered` would for `receipt`; returns its stored text. */
export function checkReceipt(receipt: unknown): string {
  return receiptText(0, receipt, 'deliveries');
}

/** Engine-agnostic outbox over its backing queue (`__alkstore_outbox:<name>`). */
export class OutboxHandle implements Outbox {
  readonly queue: Queue;
  private readonly acker: DeliveredAcker;

  constructor(
    readonly name: string,
    backingQueue: (queueName: string, opts?: QueueOpts) => Queue & DeliveredAcker,
    opts: QueueOpts | undefined,
    private readonly receipts: ReceiptDriver,
    private readonly messageIdOf: (rowId: number) => string,
  ) {
    const q = backingQueue(outboxQueueName(name), opts);
    this.queue = q;
    this.acker = q;
  }

  async ackDelivered(
    deliveries: readonly { readonly job: Pick<Job, 'id' | 'claimToken'>; readonly receipt: DeliveryReceipt }[],
  ): Promise<number> {
    const list = requireArray<{
      readonly job: Pick<Job, 'id' | 'claimToken'>;
      readonly receipt: DeliveryReceipt;
    } | null>('deliveries', deliveries);
    const jobs: Pick<Job, 'id' | 'claimToken'>[] = [];
    const rows = list.map((e, i) => {
      if (e === null || typeof e !== 'object')
        throw new InvalidArgument(`deliveries[${i}]`, 'must be an object { job, receipt }');
      const job = e.job;
      if (job === null || typeof job !== 'object')
        throw new InvalidArgument(`deliveries[${i}].job`, 'must be a claimed job ({ id, claimToken })');
      const messageId = requireJobId(`deliveries[${i}].job.id`, job.id);
      if (typeof job.claimToken !== 'string')
        throw new InvalidArgument(
          `deliveries[${i}].job.claimToken`,
          'must be a string (the claimed job of this delivery)',
        );
      jobs.push(job);
      return { messageId, receiptText: receiptText(i, e.receipt, 'deliveries') };
    });
    if (rows.length === 0) return 0;
    return this.acker.ackDelivered(jobs, this.name, rows);
  }

  async recordReceipts(
    receipts: readonly { readonly messageId: number; readonly receipt: DeliveryReceipt }[],
  ): Promise<void> {
    const list = requireArray<{ readonly messageId: number; readonly receipt: DeliveryReceipt } | null>(
      'receipts',
      receipts,
    );
    const rows = list.map((e, i) => {
      if (e === null || typeof e !== 'object')
        throw new InvalidArgument(`receipts[${i}]`, 'must be an object { messageId, receipt }');
      return {
        messageId: requireJobId(`receipts[${i}].messageId`, e.messageId),
        receiptText: receiptText(i, e.receipt),
      };
    });
    if (rows.length > 0) await this.receipts.putReceipts(this.name, rows);
  }

  async receipt(messageId: number): Promise<StoredReceipt | null> {
    return this.receipts.getReceipt(this.name, requireJobId('messageId', messageId));
  }

  async pruneReceipts(olderThanMs: number): Promise<number> {
    return this.receipts.pruneReceipts(this.name, requireDurationMs('olderThanMs', olderThanMs, { allowZero: true }));
  }

  messageId(rowId: number): string {
    return this.messageIdOf(requireJobId('rowId', rowId));
  }

  enqueue(payload: unknown, opts?: JobOpts): Promise<number> {
    return this.queue.enqueue(payload, opts);
  }

  async runOnce(workerId: string, delivery: (job: Job) => Promise<void>): Promise<boolean> {
    validateKey('worker', workerId);
    requireFunction('delivery', delivery);
    const job = await this.queue.claimOne(workerId);
    if (!job) return false;
    try {
      await delivery(job);
    } catch (err) {
      // As the dispatcher: retrying cannot help a PermanentError, and its dead letter says so.
      if (isPermanent(err)) await job.fail(new Error(`permanent: ${errorText(err)}`, { cause: err }));
      else await job.retry(err);
      return true;
    }
    await job.ack();
    return true;
  }
}

/** Text stored as `lastError` for a thrown value. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  if (typeof err === 'string') return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}
