import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { Job } from '../../lib/index.js';
import { OutboxHandler } from '../../lib/nest/index.js';
import { Delivery } from './delivery.entity.js';
import { ORDER_CREATED_OUTBOX, type OrderCreated } from './orders.service.js';

/** Delivers `order-created` messages: records a `Delivery` row (idempotent, delivery is at-least-once). */
@Injectable()
export class DeliveryHandler {
  private readonly logger = new Logger(DeliveryHandler.name);

  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  @OutboxHandler(ORDER_CREATED_OUTBOX)
  async deliver(job: Job): Promise<void> {
    const { orderId } = job.payloadAs<OrderCreated>();
    // orderId is unique: a redelivered message inserts nothing.
    await this.dataSource.createQueryBuilder().insert().into(Delivery).values({ orderId, jobId: job.id }).orIgnore().execute();
    this.logger.log(`delivered order ${orderId} (job ${job.id}, attempt ${job.attempts})`);
  }
}
