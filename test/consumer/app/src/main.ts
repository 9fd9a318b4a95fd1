// A user's application: TypeORM through @nestjs/typeorm, alkstore from the
// packed tarball, @nestjs/schedule 12 next to it. It saves an order and its
// outbox message in one transaction; the outbox handler feeds a queue; the
// queue handler finishes. Prints one line per handled step and exits 0, or
// exits 1 after a deadline.
import 'reflect-metadata';
import { Controller, Injectable, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { type Job, type Queue, openTypeOrm, Store } from 'nestjs-alkstore';
import { AlkstoreModule, InjectQueue, OutboxHandler, QueueHandler } from 'nestjs-alkstore/nest';
import { Column, DataSource, Entity, PrimaryGeneratedColumn } from 'typeorm';

const database = process.env.APP_DB ?? './app.db';

@Entity('orders')
class Order {
  @PrimaryGeneratedColumn()
  id!: number;

  @Column('varchar', { length: 100 })
  customer!: string;
}

let finish: (line: string) => void = () => undefined;
const finished = new Promise<string>((resolve) => {
  finish = resolve;
});

@Injectable()
class OrdersService {
  constructor(
    private readonly store: Store,
    private readonly dataSource: DataSource,
  ) {}

  create(customer: string): Promise<Order> {
    return this.store.joinTransaction(openTypeOrm(this.dataSource), async (tx, em) => {
      const order = await em.save(em.create(Order, { customer }));
      await tx.outboxEnqueue('order-created', { orderId: order.id, customer });
      return order;
    });
  }
}

@Injectable()
class OrderEvents {
  constructor(@InjectQueue('emails') private readonly emails: Queue) {}

  @OutboxHandler('order-created')
  async deliver(job: Job<{ orderId: number; customer: string }>): Promise<void> {
    console.log(`outbox message handled: order ${job.payload.orderId}`);
    await this.emails.enqueue({ to: job.payload.customer, orderId: job.payload.orderId });
  }

  @QueueHandler('emails')
  async send(job: Job<{ to: string; orderId: number }>): Promise<void> {
    finish(`queue job handled: email to ${job.payload.to} for order ${job.payload.orderId}`);
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Post()
  create(): Promise<Order> {
    return this.orders.create('ada@example.com');
  }
}

@Module({
  imports: [
    ScheduleModule.forRoot(),
    TypeOrmModule.forRoot({ type: 'better-sqlite3', database, entities: [Order], synchronize: true }),
    AlkstoreModule.forRootAsync({ inject: [DataSource], useFactory: (dataSource: DataSource) => ({ dataSource }) }),
    AlkstoreModule.forFeature({ queues: ['emails'] }),
  ],
  controllers: [OrdersController],
  providers: [OrdersService, OrderEvents],
})
class AppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(AppModule, { logger: ['error', 'warn'] });
  await app.listen(0, '127.0.0.1');
  const deadline = setTimeout(() => {
    console.error('consumer app: no queue job was handled within 20 s');
    process.exit(1);
  }, 20_000);
  const res = await fetch(`${await app.getUrl()}/orders`, { method: 'POST' });
  if (res.status !== 201) throw new Error(`POST /orders answered ${res.status}`);
  const order = (await res.json()) as Order;
  console.log(`order saved: ${order.id}`);
  console.log(await finished);
  clearTimeout(deadline);
  const store = app.get(Store);
  console.log(`engine: ${store.engine}`);
  await app.close();
}

main().catch((err: unknown) => {
  console.error('consumer app failed:', err);
  process.exit(1);
});
