import { outboxQueueName } from '../contract/names.js';
import type { JobOpts, QueueOpts } from '../contract/options.js';
import type { Job, Outbox, Queue } from '../contract/types.js';
import { requireFunction, validateKey } from '../contract/validate.js';

/** Engine-agnostic outbox over its backing queue (`__alkstore_outbox:<name>`). */
export class OutboxHandle implements Outbox {
  readonly queue: Queue;

  constructor(
    readonly name: string,
    backingQueue: (queueName: string, opts?: QueueOpts) => Queue,
    opts?: QueueOpts,
  ) {
    this.queue = backingQueue(outboxQueueName(name), opts);
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
      await job.retry(err);
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
