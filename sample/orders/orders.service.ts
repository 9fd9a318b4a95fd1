import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AlkstoreTransactions } from '../../lib/nest/index.js';
import { Delivery } from './delivery.entity.js';
import { Order } from './order.entity.js';

/** The outbox `POST /orders` writes to and `DeliveryHandler` drains. */
export const ORDER_CREATED_OUTBOX = 'order-created';

/** Payload of an `order-created` outbox message. */
export interface OrderCreated {
  orderId: number;
}

/** What `POST /orders` accepts. */
export interface NewOrder {
  customer: string;
  item: string;
  quantity: number;
}

@Injectable()
export class OrdersService {
  constructor(
    private readonly transactions: AlkstoreTransactions,
    @Inject(DataSource) private readonly dataSource: DataSource,
  ) {}

  /** Saves the order and its outbox message in one TypeORM transaction: both commit, or neither. */
  create(input: NewOrder): Promise<Order> {
    return this.transactions.run(async (tx, em) => {
      const order = await em.save(em.create(Order, input));
      const message: OrderCreated = { orderId: order.id };
      await tx.outboxEnqueue(ORDER_CREATED_OUTBOX, message);
      return order;
    });
  }

  list(): Promise<Order[]> {
    return this.dataSource.getRepository(Order).find({ order: { id: 'ASC' } });
  }

  deliveries(): Promise<Delivery[]> {
    return this.dataSource.getRepository(Delivery).find({ order: { id: 'ASC' } });
  }
}
