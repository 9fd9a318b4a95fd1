import { Injectable, Logger } from '@nestjs/common';
import type { Job } from '../../lib/index.js';
import { DataSource } from 'typeorm';
import { openTypeOrm } from '../../lib/adapters/index.js';
import { OutboxHandler } from '../../lib/nest/index.js';
import { Delivery } from './delivery.entity.js';
import { CONFIRMATION_EMAILS, ORDER_CREATED, type ConfirmationEmail, type OrderCreated } from './handles.js';
import { Order } from './order.entity.js';
import { Store } from '../../lib/index.js';

/**
 * Delivers `order-created` messages: records a `Delivery` row and, in the same
 * transaction, enqueues the confirmation email. Delivery is at-least-once: a
 * redelivered message finds its row and does nothing.
 */
@Injectable()
export class DeliveryHandler {
  private readonly logger = new Logger(DeliveryHandler.name);

  constructor(
    private readonly store: Store,
    private readonly dataSource: DataSource,
  ) {}

  @OutboxHandler(ORDER_CREATED)
  async deliver(job: Job<OrderCreated>): Promise<void> {
    const { orderId } = job.payload;
    const delivered = await this.store.joinTransaction(openTypeOrm(this.dataSource), async (tx, em) => {
      if (await em.findOneBy(Delivery, { orderId })) return false;
      const order = await em.findOneByOrFail(Order, { id: orderId });
      await em.insert(Delivery, { orderId, jobId: job.id });
      const email: ConfirmationEmail = { orderId, to: order.customer, reason: 'delivered' };
      // Commits with the Delivery row, or not at all.
      await tx.enqueue(CONFIRMATION_EMAILS.name, email);
      return true;
    });
    if (delivered) this.logger.log(`delivered order ${orderId} (job ${job.id}, attempt ${job.attempts})`);
  }
}
