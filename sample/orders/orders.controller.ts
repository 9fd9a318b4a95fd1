import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import type { QueueStats } from '../../lib/index.js';
import { CreateOrderDto } from './create-order.dto.js';
import type { Delivery } from './delivery.entity.js';
import { CONFIRMATION_EMAILS, ORDER_CREATED, REPORT_SCHEDULE } from './handles.js';
import type { Order } from './order.entity.js';
import { OrderIdPipe } from './order-id.pipe.js';
import { OrdersService } from './orders.service.js';
import type { Report } from './report.entity.js';
import type { SentEmail } from './sent-email.entity.js';
import { Store } from '../../lib/index.js';

/** Backlog counts of the sample's queues, read from the store. */
export interface SampleStats {
  orderCreatedOutbox: QueueStats;
  confirmationEmails: QueueStats;
  reports: QueueStats;
}

@Controller()
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    // The store itself, injected by its class.
    private readonly store: Store,
  ) {}

  @Post('orders')
  @HttpCode(201)
  create(@Body() body: CreateOrderDto): Promise<Order> {
    return this.orders.create(body);
  }

  @Get('orders')
  list(): Promise<Order[]> {
    return this.orders.list();
  }

  @Get('orders/:id')
  get(@Param('id', OrderIdPipe) id: number): Promise<Order> {
    return this.orders.get(id);
  }

  @Post('orders/:id/confirmation')
  @HttpCode(202)
  resend(@Param('id', OrderIdPipe) id: number): Promise<{ jobId: number }> {
    return this.orders.resendConfirmation(id);
  }

  @Get('deliveries')
  deliveries(): Promise<Delivery[]> {
    return this.orders.deliveries();
  }

  @Get('emails')
  emails(): Promise<SentEmail[]> {
    return this.orders.sentEmails();
  }

  @Get('reports')
  reports(): Promise<Report[]> {
    return this.orders.reports();
  }

  @Get('stats')
  async stats(): Promise<SampleStats> {
    const [orderCreatedOutbox, confirmationEmails, reports] = await Promise.all([
      this.store.outbox(ORDER_CREATED.name).queue.stats(),
      this.store.queue(CONFIRMATION_EMAILS.name).stats(),
      this.store.queue(`scheduled:${REPORT_SCHEDULE}`).stats(),
    ]);
    return { orderCreatedOutbox, confirmationEmails, reports };
  }
}
