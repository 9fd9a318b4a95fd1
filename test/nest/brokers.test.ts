import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Injectable, Module, type INestApplicationContext, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientProxyFactory, EventPattern, Payload, Transport, type ClientProxy } from '@nestjs/microservices';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Channel, ChannelModel } from 'amqplib';
import { lastValueFrom } from 'rxjs';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { TxOps } from '../../lib/contract/types.js';
import { AlkstoreHealthIndicator, AlkstoreHealthModule } from '../../lib/health/index.js';
import {
  AlkstoreBrokersModule,
  AlkstoreModule,
  InboxEvent,
  InboxHandler,
  InboxTx,
  OutboxHandler,
} from '../../lib/nest/index.js';
import {
  ClientProxyPublisher,
  NatsJetStreamPublisher,
  RabbitMqPublisher,
  type OutboxEvent,
} from '../../lib/publishers/index.js';
import { waitFor } from '../helpers/engines.js';
import {
  AMQP_URL,
  NATS_URL,
  brokerName,
  createStream,
  deleteStream,
  natsAdmin,
  requireBroker,
  topicQueue,
} from '../helpers/brokers.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { expectError, uid } from '../contract/harness.js';
import { MemoryLogger, nestEngines, type NestDb } from './nest-fixtures.js';
import { Store } from '../../lib/index.js';
import { type InboxMessage } from '../../lib/entry/brokers.js';

/**
 * The effects of the inbox handlers (a queue row per handled message, written in the inbox transaction),
 * collected until there are `count` of them and `also()` holds.
 */
async function effects(
  store: Store,
  queue: string,
  count: number,
  also: () => Promise<boolean> = async () => true,
): Promise<string[]> {
  const seen: string[] = [];
  await waitFor(
    `${count} messages handled`,
    async () => {
      for (const j of await store.queue(queue).claimBatch(1000, 'test'))
        seen.push((j.payload as { messageId: string }).messageId);
      return seen.length >= count && (await also());
    },
    30_000,
  );
  return seen;
}

/**
 * The Nest glue of the brokers, in real Nest applications against the real servers, on both engines:
 * publishers configured on `AlkstoreBrokersModule`, `@InboxHandler` consumers (JetStream and RabbitMQ),
 * `@InboxEvent` on `@EventPattern` handlers of the RabbitMQ microservice transport, and the publishers'
 * health in `alkstore/health`.
 */
for (const engine of nestEngines()) {
  describe(`Nest brokers glue [${engine.name}]`, () => {
    let db: NestDb;
    let nc: NatsConnection;
    let conn: ChannelModel;
    let ch: Channel;
    const cleanups: (() => Promise<unknown>)[] = [];
    beforeAll(async () => {
      db = await engine.create();
      nc = await natsAdmin();
      await requireBroker('RabbitMQ', AMQP_URL.replace(/^amqp:\/\/[^@]*@/, ''));
      const amqp = await import('amqplib');
      conn = await amqp.connect(AMQP_URL);
      ch = await conn.createChannel();
    }, 60_000);
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
      await nc?.close();
      await conn?.close();
      await db?.destroy();
    }, 60_000);

    async function context(module: object): Promise<INestApplicationContext> {
      const app = await NestFactory.createApplicationContext(module as never, { logger: false, abortOnError: false });
      app.enableShutdownHooks();
      cleanups.push(() => app.close());
      return app;
    }

    it('JetStream: a publisher from the module delivers the outbox, an @InboxHandler runs each message once in its inbox transaction and acks after commit', async () => {
      const stream = brokerName('ALKNEST');
      const prefix = stream.toLowerCase();
      await createStream(nc, stream, prefix);
      cleanups.push(() => deleteStream(nc, stream));
      const { jetstreamManager, AckPolicy } = await import('@nats-io/jetstream');
      const jsm = await jetstreamManager(nc);
      await jsm.consumers.add(stream, {
        durable_name: 'billing',
        ack_policy: AckPolicy.Explicit,
        ack_wait: 5_000_000_000,
      });
      const outbox = uid('nest-js');
      const inbox = uid('billing');
      const effectQueue = uid('invoices');
      let failedOnce = false;

      @Injectable()
      class Billing {
        @InboxHandler(inbox, { jetstream: { stream, consumer: 'billing', retryDelayMs: 50 } })
        async invoice(tx: TxOps, message: InboxMessage<{ n: number }>): Promise<void> {
          await tx.enqueue(effectQueue, { messageId: message.messageId, type: message.envelope.type });
          // The first message's first attempt rolls back after its write: redelivered, its effect still once.
          if (message.payload.n === 0 && !failedOnce) {
            failedOnce = true;
            throw new Error('first attempt fails');
          }
        }
      }
      @Module({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() })),
          AlkstoreBrokersModule.forRoot({
            nats: { servers: NATS_URL },
            publishers: [
              {
                outbox,
                publisher: () => new NatsJetStreamPublisher({ stream, subject: `${prefix}.{type}`, servers: NATS_URL }),
                settings: { idlePollIntervalMs: 200 },
              },
            ],
          }),
        ],
        providers: [Billing],
      })
      class AppModule {}
      const app = await context(AppModule);
      const store = app.get(Store);
      const idOf = (
        (ob) =>
        (id: number): string =>
          ob.messageId(id)
      )(store.outbox(outbox));
      const ids: number[] = [];
      for (let n = 0; n < 20; n++)
        ids.push(await store.withTx((tx) => tx.outboxEnqueue(outbox, { n }, { envelope: { type: 'order.placed' } })));
      const seen = await effects(store, effectQueue, 20);
      await waitFor(
        'every stream message acked',
        async () =>
          (await jsm.consumers.info(stream, 'billing')).num_ack_pending +
            (await jsm.consumers.info(stream, 'billing')).num_pending ===
          0,
      );
      expect([...seen].sort()).toEqual(ids.map(idOf).sort());
      expect(failedOnce).toBe(true);
      expect((await store.outbox(outbox).receipt(ids[0]!))?.receipt).toMatchObject({
        broker: 'nats-jetstream',
        stream,
      });
      expect(await store.inbox(inbox).get(idOf(ids[0]!))).toMatchObject({ state: 'done' });
      await app.close();
    }, 60_000);

    it('RabbitMQ: an @InboxHandler absorbs a redelivered copy of a message (same messageId): one effect per message, every message acked', async () => {
      const queue = brokerName('alk.nest.q');
      await ch.assertQueue(queue, { durable: true });
      cleanups.push(() => ch.deleteQueue(queue));
      const outbox = uid('nest-rmq');
      const inbox = uid('billing');
      const effectQueue = uid('invoices');

      @Injectable()
      class Billing {
        @InboxHandler(inbox, { rabbitmq: { queue }, concurrency: 8 })
        async invoice(tx: TxOps, message: InboxMessage): Promise<void> {
          await tx.enqueue(effectQueue, { messageId: message.messageId });
        }
      }
      @Module({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() })),
          AlkstoreBrokersModule.forRoot({
            rabbitmq: { url: AMQP_URL, reconnectWaitMs: 100 },
            publishers: [
              {
                outbox,
                publisher: () => new RabbitMqPublisher({ url: AMQP_URL, exchange: '', routingKey: queue }),
                settings: { idlePollIntervalMs: 200 },
              },
            ],
          }),
        ],
        providers: [Billing],
      })
      class AppModule {}
      const app = await context(AppModule);
      const store = app.get(Store);
      const idOf = (
        (ob) =>
        (id: number): string =>
          ob.messageId(id)
      )(store.outbox(outbox));
      const ids: number[] = [];
      for (let n = 0; n < 10; n++) ids.push(await store.outboxEnqueue(outbox, { n }));
      // A second copy of the first message, as a broker redelivery or a producer republish would bring it.
      ch.sendToQueue(queue, Buffer.from(JSON.stringify({ n: 0 })), { messageId: idOf(ids[0]!), persistent: true });
      const seen = await effects(store, effectQueue, 10);
      await waitFor('the queue drained and acked', async () => (await ch.checkQueue(queue)).messageCount === 0);
      await app.close();
      // Closed: anything left unacked would be back in the queue now.
      expect((await ch.checkQueue(queue)).messageCount).toBe(0);
      expect([...seen].sort()).toEqual(ids.map(idOf).sort());
    }, 60_000);

    it('@EventPattern + @InboxEvent on the NATS transport: the event runs in the inbox transaction, a duplicate is skipped', async () => {
      const subject = brokerName('alk_nest_ev');
      const outbox = uid('nest-ev');
      const inbox = uid('events');
      const effectQueue = uid('effects');
      const nats = { servers: [NATS_URL] };
      const client: ClientProxy = ClientProxyFactory.create({ transport: Transport.NATS, options: nats });
      cleanups.push(() => client.close() as Promise<void>);
      const handled: string[] = [];
      let failedOnce = false;

      @Controller()
      class Events {
        // Nest 12 types EventPattern's extra parameters as unknown unless the pattern type is given.
        @EventPattern<string>(`${subject}.order.placed`)
        @InboxEvent(inbox)
        async placed(@Payload() event: OutboxEvent<{ n: number }>, @InboxTx() tx: TxOps): Promise<void> {
          handled.push(event.messageId);
          await tx.enqueue(effectQueue, { messageId: event.messageId });
          if (event.payload.n === 5 && !failedOnce) {
            failedOnce = true;
            throw new Error('rolls back: the effect above is not kept');
          }
        }
      }
      @Module({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() })),
          AlkstoreBrokersModule.forRoot({
            publishers: [
              {
                outbox,
                publisher: () => new ClientProxyPublisher({ client, pattern: `${subject}.{type}` }),
                settings: { idlePollIntervalMs: 200 },
              },
            ],
          }),
        ],
        controllers: [Events],
      })
      class AppModule {}
      const app: INestMicroservice = await NestFactory.createMicroservice(AppModule, {
        transport: Transport.NATS,
        options: nats,
        logger: false,
        abortOnError: false,
      });
      cleanups.push(() => app.close());
      await app.listen();
      const store = app.get(Store);
      const idOf = (
        (ob) =>
        (id: number): string =>
          ob.messageId(id)
      )(store.outbox(outbox));
      const ids: number[] = [];
      for (let n = 0; n < 10; n++)
        ids.push(await store.outboxEnqueue(outbox, { n }, { envelope: { type: 'order.placed' } }));
      await waitFor(
        'the outbox delivered',
        async () =>
          (await store.outbox(outbox).queue.stats()).pending + (await store.outbox(outbox).queue.stats()).processing ===
          0,
        30_000,
      );
      await waitFor(
        'the failing event recorded',
        async () => (await store.inbox(inbox).get(idOf(ids[5]!)))?.state === 'failed',
      );
      // The same events again (an outbox republish): the one done is skipped, the failed one runs again.
      for (const n of [3, 5])
        await lastValueFrom(
          client.emit(`${subject}.order.placed`, { messageId: idOf(ids[n]!), payload: { n }, headers: {} }),
          { defaultValue: undefined },
        );
      const seen = await effects(
        store,
        effectQueue,
        10,
        async () => (await store.inbox(inbox).get(idOf(ids[5]!)))?.state === 'done',
      );
      await waitFor(
        'the duplicate went through the pipeline',
        () => handled.filter((h) => h === idOf(ids[5]!)).length === 2,
      );
      expect([...seen].sort()).toEqual(ids.map(idOf).sort());
      expect(handled.filter((h) => h === idOf(ids[3]!))).toHaveLength(1);
      expect(await store.inbox(inbox).get(idOf(ids[5]!))).toMatchObject({ state: 'done', attempts: 2 });
      await app.close();
    }, 60_000);

    it('alkstore/health reports a publisher whose broker is unreachable (degraded, down with requirePublishers) and one whose publishes keep failing', async () => {
      const proxy = new TcpProxy('127.0.0.1', 5672);
      const port = await proxy.start();
      cleanups.push(() => proxy.stop());
      const { exchange } = await topicQueue(ch, 'alk.nest.h', 'bound.#', cleanups);
      const cut = uid('nest-h-cut');
      const failing = uid('nest-h-fail');
      const fast = {
        publishTimeoutMs: 300,
        busyPollIntervalMs: 20,
        idlePollIntervalMs: 100,
        retry: { baseMs: 20, maxDelayMs: 40, maxAttempts: 50 },
      };
      @Module({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() })),
          AlkstoreHealthModule,
          AlkstoreBrokersModule.forRoot({
            publishers: [
              {
                outbox: cut,
                publisher: () =>
                  new RabbitMqPublisher({
                    url: `amqp://guest:guest@127.0.0.1:${port}`,
                    exchange,
                    routingKey: 'bound.x',
                    reconnectWaitMs: 50,
                  }),
                settings: fast,
              },
              // Unroutable (mandatory, nothing bound): connected, and every publish fails.
              {
                outbox: failing,
                publisher: () => new RabbitMqPublisher({ url: AMQP_URL, exchange, routingKey: 'nowhere.x' }),
                settings: fast,
              },
            ],
          }),
        ],
      })
      class AppModule {}
      const app = await context(AppModule);
      const store = app.get(Store);
      const health = app.get(AlkstoreHealthIndicator);
      await store.outboxEnqueue(cut, { ok: true });
      await waitFor(
        'the reachable outbox delivered',
        async () => (await store.outbox(cut).queue.stats()).pending === 0,
      );
      const up = await health.isHealthy('alkstore');
      expect(up.alkstore.publishers[cut]).toEqual({ status: 'up' });
      for (let i = 0; i < 3; i++) await store.outboxEnqueue(failing, { i }, { maxAttempts: 50 });
      proxy.block();
      await store.outboxEnqueue(cut, { during: 'outage' });
      const degraded = await waitFor('both publishers reported', async () => {
        const r = await health.isHealthy('alkstore');
        return r.alkstore.publishers[cut]?.status === 'degraded' &&
          r.alkstore.publishers[failing]?.status === 'degraded'
          ? r
          : null;
      });
      expect(degraded.alkstore.status).toBe('degraded');
      expect(degraded.alkstore.publishers[failing]?.detail).toMatch(/publishes failed in a row \(last: unroutable/);
      expect(
        degraded.alkstore.problems.some((p) => p.startsWith(`publisher of outbox ${JSON.stringify(cut)} degraded`)),
      ).toBe(true);
      const strict = await health.isHealthy('alkstore', { requirePublishers: true });
      expect(strict.alkstore.status).toBe('down');
      proxy.unblock();
      await waitFor(
        'the cut publisher up again',
        async () => (await health.isHealthy('alkstore')).alkstore.publishers[cut]?.status === 'up',
        20_000,
      );
      await app.close();
    }, 60_000);

    it('fails startup naming the method or the option: a JetStream @InboxHandler without nats, a publisher that is not a factory, an outbox with both a publisher and an @OutboxHandler', async () => {
      const inbox = uid('bad');
      @Injectable()
      class NoNats {
        @InboxHandler(inbox, { jetstream: { stream: 'S', consumer: 'c' } })
        async handle(): Promise<void> {}
      }
      @Module({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() })),
          AlkstoreBrokersModule.forRoot({}),
        ],
        providers: [NoNats],
      })
      class NoNatsModule {}
      const err = await expectError(
        () => NestFactory.createApplicationContext(NoNatsModule, { logger: false, abortOnError: false }),
        Error,
      );
      expect(err.message).toContain('NoNats.handle');
      expect(err.message).toContain('nats');

      const notFactory = await expectError(
        () =>
          AlkstoreBrokersModule.forRoot({
            publishers: [{ outbox: 'o', publisher: new RabbitMqPublisher({ exchange: '', routingKey: 'q' }) as never }],
          }),
        InvalidOption,
      );
      expect(notFactory.message).toContain('publishers[0].publisher');

      const both = uid('both');
      @Injectable()
      class Handler {
        @OutboxHandler(both)
        async deliver(): Promise<void> {}
      }
      @Module({
        imports: [
          AlkstoreModule.forRoot(db.moduleOptions({ logger: new MemoryLogger() })),
          AlkstoreBrokersModule.forRoot({
            publishers: [{ outbox: both, publisher: () => new RabbitMqPublisher({ exchange: '', routingKey: 'q' }) }],
          }),
        ],
        providers: [Handler],
      })
      class BothModule {}
      const twice = await expectError(
        () => NestFactory.createApplicationContext(BothModule, { logger: false, abortOnError: false }),
        InvalidOption,
      );
      expect(twice.message).toContain('Handler.deliver');
    }, 60_000);
  });
}
