/**
 * Compile-time test, checked by `npx tsc --noEmit -p tsconfig.json` (CI's typecheck step), never run:
 * a payload type declared once with `defineQueue<T>` / `defineOutbox<T>` binds the handler's `Job<T>`
 * and the injected `Queue<T>` / `Outbox<T>`. Each `@ts-expect-error` line must stay an error; an
 * unused one fails the typecheck.
 */
import { Injectable } from '@nestjs/common';
import type { Job, Outbox, Queue } from '../../lib/contract/types.js';
import {
  defineOutbox,
  defineQueue,
  InjectOutbox,
  InjectQueue,
  OutboxHandler,
  QueueHandler,
  type JobOf,
  type OutboxOf,
  type QueueOf,
} from '../../lib/nest/index.js';

interface Email {
  to: string;
  subject: string;
}
interface OrderCreated {
  orderId: number;
}

const EMAILS = defineQueue<Email>('typed-emails');
const ORDERS = defineOutbox<OrderCreated>('typed-orders');

@Injectable()
export class TypedHandlers {
  @QueueHandler(EMAILS)
  async send(job: Job<Email>): Promise<void> {
    const to: string = job.payload.to;
    void to;
  }

  @OutboxHandler(ORDERS)
  async deliver(job: JobOf<typeof ORDERS>, signal: AbortSignal): Promise<void> {
    const id: number = job.payload.orderId;
    void id;
    void signal;
  }

  // A handler may take less than the queue carries: `Job` (unknown payload) or no argument.
  @QueueHandler(defineQueue<Email>('typed-loose'))
  async loose(job: Job): Promise<void> {
    void job;
  }

  @QueueHandler(defineQueue<Email>('typed-none'))
  async none(): Promise<void> {}

  // @ts-expect-error the queue carries Email, the handler expects OrderCreated
  @QueueHandler(EMAILS)
  async wrongPayload(job: Job<OrderCreated>): Promise<void> {
    void job;
  }

  // @ts-expect-error the outbox carries OrderCreated, the handler expects a string
  @OutboxHandler(ORDERS)
  async wrongOutboxPayload(job: Job<string>): Promise<void> {
    void job;
  }

  // A batch handler takes the jobs as an array of the same type.
  @QueueHandler(defineQueue<Email>('typed-batch'), { batchSize: 10 })
  async batch(jobs: Job<Email>[]): Promise<void> {
    void jobs;
  }

  // @ts-expect-error a batch of the wrong payload type
  @QueueHandler(defineQueue<Email>('typed-batch-wrong'), { batchSize: 10 })
  async wrongBatch(jobs: Job<number>[]): Promise<void> {
    void jobs;
  }

  // A plain name keeps the untyped decorator: existing handlers compile unchanged.
  @QueueHandler('typed-plain')
  async plain(job: Job<{ anything: boolean }>): Promise<void> {
    void job;
  }
}

@Injectable()
export class TypedProducer {
  constructor(
    @InjectQueue(EMAILS) private readonly emails: QueueOf<typeof EMAILS>,
    @InjectOutbox(ORDERS) private readonly orders: OutboxOf<typeof ORDERS>,
    @InjectQueue('typed-plain') private readonly plain: Queue,
  ) {}

  async produce(): Promise<void> {
    await this.emails.enqueue({ to: 'a@example.com', subject: 'hi' });
    await this.emails.enqueueMany([{ to: 'b@example.com', subject: 'hey' }]);
    await this.orders.enqueue({ orderId: 1 });
    await this.plain.enqueue({ whatever: [1, 2] });

    // @ts-expect-error subject is missing
    await this.emails.enqueue({ to: 'a@example.com' });
    // @ts-expect-error a number is not an Email
    await this.emails.enqueue(42);
    // @ts-expect-error orderId must be a number
    await this.orders.enqueue({ orderId: '1' });

    const claimed = await this.emails.claimOne();
    if (claimed) {
      const subject: string = claimed.payload.subject;
      void subject;
    }
    const dead = await this.orders.queue.listDead();
    const ids: number[] = dead.map((d) => d.payload.orderId);
    void ids;
  }
}

// `Queue` and `Outbox` still default to unknown payloads.
export function untyped(queue: Queue, outbox: Outbox): Promise<number[]> {
  return Promise.all([queue.enqueue(Symbol.iterator.toString()), outbox.enqueue(null)]);
}
