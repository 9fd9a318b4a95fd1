import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload, Transport, type RmqContext } from '@nestjs/microservices';
import type { Channel, ChannelModel } from 'amqplib';
import type { TxOps } from '../../lib/contract/types.js';
import { AlkstoreModule, InboxEvent, InboxTx } from '../../lib/nest/index.js';
import { waitFor } from '../helpers/engines.js';
import { AMQP_URL, brokerName, requireBroker } from '../helpers/brokers.js';
import { uid } from '../contract/harness.js';
import { MemoryLogger, nestEngines, type NestDb } from '../nest/nest-fixtures.js';
import { Store } from '../../lib/index.js';

interface OrderEvent {
  readonly n: number;
}

/**
 * `@InboxEvent(inbox, { ack: 'after-commit' })` on an `@EventPattern` of Nest's RabbitMQ transport
 * (`Transport.RMQ`, `noAck: false`, which needs `amqp-connection-manager`) against the real RabbitMQ,
 * on both engines:
 *
 * - the broker is acked only once the inbox transaction committed: with `prefetchCount: 1` the next
 *   message arrives only after that ack, and it sees the previous one done from outside its transaction;
 * - a handler failure rolls back and leaves the message unacked: requeued, redelivered, its effect once;
 * - a duplicate delivery (same `messageId`) is "seen": acked without running the method.
 *
 * After the application closes, the queue is empty: anything left unacked would be back in it.
 */
for (const engine of nestEngines()) {
  describe(`@InboxEvent ack: 'after-commit' on Nest's RMQ transport [${engine.name}]`, () => {
    let db: NestDb;
    let conn: ChannelModel;
    let ch: Channel;
    beforeAll(async () => {
      db = await engine.create();
      await requireBroker('RabbitMQ', AMQP_URL.replace(/^amqp:\/\/[^@]*@/, ''));
      const amqp = await import('amqplib');
      conn = await amqp.connect(AMQP_URL);
      ch = await conn.createChannel();
    }, 60_000);
    afterAll(async () => {
      await conn?.close();
      await db?.destroy();
    }, 60_000);

    it('acks after the commit, leaves a rolled-back message unacked (redelivered), acks a duplicate without running the method', async () => {
      const queue = brokerName('alk.nest.rmq.ac');
      const inbox = uid('ac');
      const effects = uid('effects');
      await ch.assertQueue(queue, { durable: true });
      const calls: string[] = [];
      /** The inbox state of the previous message, read outside the transaction when the next one arrives. */
      const previousSeenAs: (string | undefined)[] = [];
      let failedOnce = false;
      let previous: string | null = null;
      let store: Store | null = null;

      @Controller()
      class Orders {
        @EventPattern<string>('orders.placed')
        @InboxEvent(inbox, { ack: 'after-commit' })
        async placed(@Payload() event: OrderEvent, @Ctx() ctx: RmqContext, @InboxTx() tx: TxOps): Promise<void> {
          const id = String((ctx.getMessage() as { properties: { messageId: string } }).properties.messageId);
          calls.push(id);
          // The sentinel, sent last: with prefetch 1 it is delivered only once every message before it was acked.
          if (event.n === 99) return;
          if (previous !== null && previous !== id)
            previousSeenAs.push((await store!.inbox(inbox).get(previous))?.state);
          previous = id;
          await tx.enqueue(effects, { id });
          // Still inside the transaction: an ack sent before the commit would let the next message in now.
          await new Promise((r) => setTimeout(r, 100));
          if (event.n === 2 && !failedOnce) {
            failedOnce = true;
            throw new Error('rolls back: the effect above is not kept, the message stays unacked');
          }
        }
      }
      @Module({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() }))],
        controllers: [Orders],
      })
      class AppModule {}
      const app: INestMicroservice = await NestFactory.createMicroservice(AppModule, {
        transport: Transport.RMQ,
        options: { urls: [AMQP_URL], queue, noAck: false, prefetchCount: 1, queueOptions: { durable: true } },
        logger: false,
        abortOnError: false,
      });
      try {
        await app.listen();
        store = app.get(Store);
        const send = (id: string, n: number): boolean =>
          ch.sendToQueue(queue, Buffer.from(JSON.stringify({ pattern: 'orders.placed', data: { n } })), {
            messageId: id,
            persistent: true,
          });
        const ids = ['m1', 'm2', 'm3', 'm4'].map((m) => `${inbox}-${m}`);
        const sentinel = `${inbox}-sentinel`;
        send(ids[0]!, 0);
        // A duplicate delivery of the first message.
        send(ids[0]!, 0);
        ids.slice(1).forEach((id, n) => send(id, n + 1));
        send(sentinel, 99);
        const seen: string[] = [];
        await waitFor(
          'every effect written and the sentinel delivered (so every message before it was acked)',
          async () => {
            for (const j of await store!.queue(effects).claimBatch(100, 'test'))
              seen.push((j.payload as { id: string }).id);
            return seen.length >= ids.length && calls.includes(sentinel);
          },
          30_000,
        );
        // One effect per message, the rolled-back attempt's not kept.
        expect([...seen].sort()).toEqual([...ids].sort());
        // m3 ran twice (rolled back, then redelivered); the duplicate of m1 never reached the method.
        expect(calls.filter((c) => c === ids[2])).toHaveLength(2);
        expect(calls.filter((c) => c === ids[0])).toHaveLength(1);
        expect(await store!.inbox(inbox).get(ids[2]!)).toMatchObject({ state: 'done', attempts: 2 });
        // Whenever a message arrived, the one before had committed: its ack came after its commit.
        expect(previousSeenAs.length).toBeGreaterThanOrEqual(ids.length - 1);
        for (const s of previousSeenAs) expect(['done', 'failed']).toContain(s);
      } finally {
        await app.close();
      }
      // Closed: anything left unacked is back in the queue now; at most the sentinel may be (its ack can race the close).
      const left: string[] = [];
      for (let m = await ch.get(queue, { noAck: true }); m !== false; m = await ch.get(queue, { noAck: true }))
        left.push(String(m.properties.messageId));
      expect(left.filter((id) => !id.endsWith('-sentinel'))).toEqual([]);
      await ch.deleteQueue(queue);
    }, 60_000);
  });
}
