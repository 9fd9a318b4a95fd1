// The README's "With NestJS" block (pasted as src/app.module.ts by
// test/consumer/run.sh), exercised the way its prose says: create an order,
// and its outbox message and queue job confirm it. `vi.waitFor` polls until
// the condition holds or its deadline passes.
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { AppModule, Order, OrdersService } from './app.module.js';

describe('the README Nest block', () => {
  it('saves an order with its outbox message; the outbox handler enqueues the email; the queue handler confirms the order', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    const app = moduleRef.createNestApplication();
    await app.init();
    try {
      const order = await app.get(OrdersService).create('Ada');
      const orders = app.get(DataSource).getRepository(Order);
      await vi.waitFor(async () => expect((await orders.findOneByOrFail({ id: order.id })).status).toBe('confirmed'), {
        timeout: 20_000,
        interval: 20,
      });
    } finally {
      await app.close();
    }
  }, 30_000); // vitest's 5 s default would cut the 20 s wait above short on a loaded machine
});
