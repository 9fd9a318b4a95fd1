import { Injectable, NotFoundException } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, type Repository } from 'typeorm';
import { openTypeOrm } from '../../lib/adapters/index.js';
import { InjectQueue, type QueueOf } from '../../lib/nest/index.js';
import type { CreateOrderDto } from './create-order.dto.js';
import { Delivery } from './delivery.entity.js';
import { CONFIRMATION_EMAILS, ORDER_CREATED, type OrderCreated } from './handles.js';
import { Order } from './order.entity.js';
import { Report } from './report.entity.js';
import { SentEmail } from './sent-email.entity.js';
import { Store } from '../../lib/index.js';

@Injectable()
export class OrdersService {
  constructor(
    private readonly store: Store,
    private readonly dataSource: DataSource,
    @InjectRepository(Order) private readonly orders: Repository<Order>,
    @InjectRepository(Delivery) private readonly deliveryRows: Repository<Delivery>,
    @InjectRepository(SentEmail) private readonly emailRows: Repository<SentEmail>,
    @InjectRepository(Report) private readonly reportRows: Repository<Report>,
    // Typed by the ref: `enqueue` only takes a ConfirmationEmail.
    @InjectQueue(CONFIRMATION_EMAILS) private readonly emails: QueueOf<typeof CONFIRMATION_EMAILS>,
  ) {}

  /** Saves the order and its outbox message in one TypeORM transaction: both commit, or neither. */
  create(input: CreateOrderDto): Promise<Order> {
    return this.store.joinTransaction(openTypeOrm(this.dataSource), async (tx, em) => {
      const order = await em.save(
        em.create(Order, { customer: input.customer, item: input.item, quantity: input.quantity ?? 1 }),
      );
      const message: OrderCreated = { orderId: order.id };
      await tx.outboxEnqueue(ORDER_CREATED.name, message);
      return order;
    });
  }

  /** Asks for the confirmation email again, straight on the queue (no business write to pair it with). */
  async resendConfirmation(id: number): Promise<{ jobId: number }> {
    const order = await this.get(id);
    const jobId = await this.emails.enqueue({ orderId: order.id, to: order.customer, reason: 'resend' });
    return { jobId };
  }

  async get(id: number): Promise<Order> {
    const order = await this.orders.findOneBy({ id });
    if (!order) throw new NotFoundException(`no order ${id}`);
    return order;
  }

  list(): Promise<Order[]> {
    return this.orders.find({ order: { id: 'ASC' } });
  }

  deliveries(): Promise<Delivery[]> {
    return this.deliveryRows.find({ order: { id: 'ASC' } });
  }

  sentEmails(): Promise<SentEmail[]> {
    return this.emailRows.find({ order: { id: 'ASC' } });
  }

  reports(): Promise<Report[]> {
    return this.reportRows.find({ order: { id: 'ASC' } });
  }
}
