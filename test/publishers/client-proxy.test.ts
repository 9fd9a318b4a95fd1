import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, EventPattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { ClientProxyPublisher, type OutboxEvent } from '../../lib/publishers/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';
import { expectError, uid } from '../contract/harness.js';

const received: OutboxEvent<{ i: number }>[] = [];

@Controller()
class OrdersEvents {
  @EventPattern('orders.order.placed')
  placed(@Payload() event: OutboxEvent<{ i: number }>): void {
    received.push(event);
  }
}

@Module({ controllers: [OrdersEvents] })
class EventsModule {}

/** Any Nest microservices transport through its ClientProxy (here TCP to a real Nest microservice), on both engines. */
for (const engine of contractEngines()) {
  describe(`ClientProxy publisher [${engine.name}]`, () => {
    let store: Store;
    let app: INestMicroservice;
    let client: ClientProxy;
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    withEngineDb(engine, (_db, s) => (store = s));
    beforeAll(async () => {
      app = await NestFactory.createMicroservice(EventsModule, {
        transport: Transport.TCP,
        options: { host: '127.0.0.1', port },
        logger: false,
      });
      await app.listen();
      client = ClientProxyFactory.create({ transport: Transport.TCP, options: { host: '127.0.0.1', port } });
    });
    afterAll(async () => {
      await client?.close();
      await app?.close();
    });

    it('emits each message (id, payload, headers) to @EventPattern handlers and acks once the emit completed', async () => {
      received.length = 0;
      const outbox = uid('proxy');
      const ids: number[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(
          await store.outboxEnqueue(outbox, { i }, { envelope: { type: 'order.placed', correlationId: `c${i}` } }),
        );
      const ac = new AbortController();
      const done = new OutboxDispatcher({
        store,
        outbox,
        publisher: new ClientProxyPublisher({ client, pattern: 'orders.{type}' }),
      }).run(ac.signal);
      try {
        await waitFor(
          'every message acked',
          async () =>
            (await store.outbox(outbox).queue.stats()).pending +
              (await store.outbox(outbox).queue.stats()).processing ===
            0,
        );
        await waitFor('every event handled', () => received.length >= 5);
      } finally {
        ac.abort();
        await done;
      }
      const messageIds = ids.map((id) => `${store.storeId}:${id}`);
      expect(received.map((e) => e.messageId).sort()).toEqual([...messageIds].sort());
      expect(received.find((e) => e.messageId === messageIds[0])).toMatchObject({
        payload: { i: 0 },
        headers: { 'message-type': 'order.placed', 'correlation-id': 'c0' },
      });
      expect((await store.outbox(outbox).receipt(ids[0]!))?.receipt).toEqual({
        broker: 'client-proxy',
        pattern: 'orders.order.placed',
      });
    });

    it('refuses something that is not a ClientProxy, and an unknown pattern field', async () => {
      await expectError(() => new ClientProxyPublisher({ client: {} as never, pattern: 'x' }), InvalidOption);
      const err = await expectError(
        () => new ClientProxyPublisher({ client, pattern: 'orders.{kind}' }),
        InvalidOption,
      );
      expect(err.message).toContain('{kind}');
    });
  });
}
