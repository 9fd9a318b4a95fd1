import { BadRequestException, Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import type { Delivery } from './delivery.entity.js';
import type { Order } from './order.entity.js';
import { type NewOrder, OrdersService } from './orders.service.js';
import { ReportJob } from './report.job.js';

@Controller()
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly report: ReportJob,
  ) {}

  @Post('orders')
  @HttpCode(201)
  create(@Body() body: unknown): Promise<Order> {
    return this.orders.create(parseOrder(body));
  }

  @Get('orders')
  list(): Promise<Order[]> {
    return this.orders.list();
  }

  @Get('deliveries')
  deliveries(): Promise<Delivery[]> {
    return this.orders.deliveries();
  }

  @Get('stats')
  stats(): { reportRuns: number } {
    return { reportRuns: this.report.runs };
  }
}

function parseOrder(body: unknown): NewOrder {
  const b = (body ?? {}) as Record<string, unknown>;
  const text = (field: string): string => {
    const v = b[field];
    if (typeof v !== 'string' || v.trim().length === 0 || v.length > 200) throw new BadRequestException(`${field} must be a non-empty string of at most 200 characters`);
    return v;
  };
  const quantity = b.quantity === undefined ? 1 : b.quantity;
  if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 1) throw new BadRequestException('quantity must be a positive integer');
  return { customer: text('customer'), item: text('item'), quantity };
}
