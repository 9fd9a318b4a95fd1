import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Channel, ChannelModel, GetMessage } from 'amqplib';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { RabbitMqPublisher } from '../../lib/publishers/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';
import { AMQP_URL, brokerName, requireBroker } from '../helpers/brokers.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { expectError, pause, uid } from '../contract/harness.js';
import { RecordingMetrics, recordingLogger } from './recording-metrics.js';

/** The RabbitMQ confirm-channel publisher against the real broker, on both engines. */
for (const engine of contractEngines()) {
  describe(`RabbitMQ publisher [${engine.name}]`, () => {
    let store: Store;
    let conn: ChannelModel;
    let ch: Channel;
    const exchanges: string[] = [];
    const queues: string[] = [];
    withEngineDb(engine, (_db, s) => (store = s));
    beforeAll(async () => {
      await requireBroker('RabbitMQ', AMQP_URL.replace(/^amqp:\/\/[^@]*@/, ''));
      const amqp = await import('amqplib');
      conn = await amqp.connect(AMQP_URL);
      ch = await conn.createChannel();
    });
    afterAll(async () => {
      for (const q of queues) await ch.deleteQueue(q).catch(() => undefined);
      for (const e of exchanges) await ch.deleteExchange(e).catch(() => undefined);
      await conn.close();
    });

    /** A durable topic exchange with one queue bound on `bound.#`. */
    async function topology(): Promise<{ exchange: string; queue: string }> {
      const exchange = brokerName('alk.ex');
      const queue = brokerName('alk.q');
      exchanges.push(exchange);
      queues.push(queue);
      await ch.assertExchange(exchange, 'topic', { durable: true });
      await ch.assertQueue(queue, { durable: true });
      await ch.bindQueue(queue, exchange, 'bound.#');
      return { exchange, queue };
    }

    async function drain(queue: string): Promise<GetMessage[]> {
      const out: GetMessage[] = [];
      for (;;) {
        const m = await ch.get(queue, { noAck: true });
        if (m === false) return out;
        out.push(m);
      }
    }

    function start(d: OutboxDispatcher): { stop: () => Promise<void> } {
      const ac = new AbortController();
      const done = d.run(ac.signal);
      return {
        stop: async () => {
          ac.abort();
          await done;
        },
      };
    }

    const settled = async (outbox: string): Promise<boolean> => {
      const st = await store.outbox(outbox).queue.stats();
      return st.pending + st.processing === 0;
    };

    it('publishes persistent, mandatory messages with messageId = the message id (<storeId>:<rowId>) and the envelope as properties, acked on the confirm, receipt stored', async () => {
      const t = await topology();
      const outbox = uid('rmq');
      const ids: number[] = [];
      for (let i = 0; i < 10; i++)
        ids.push(
          await store.outboxEnqueue(
            outbox,
            { n: i },
            { envelope: { type: 'order.placed', version: 3, correlationId: `c-${i}`, causationId: 'cmd' } },
          ),
        );
      const d = new OutboxDispatcher({
        store,
        outbox,
        publisher: new RabbitMqPublisher({ url: AMQP_URL, exchange: t.exchange, routingKey: 'bound.{type}' }),
      });
      const run = start(d);
      try {
        await waitFor('every message acked', () => settled(outbox));
        expect(d.health()).toEqual({ status: 'up' });
      } finally {
        await run.stop();
      }
      const got = await drain(t.queue);
      const messageIds = ids.map((id) => `${store.storeId}:${id}`);
      expect(got.map((m) => m.properties.messageId).sort()).toEqual([...messageIds].sort());
      const m0 = got.find((m) => m.properties.messageId === messageIds[0])!;
      expect(m0.fields.routingKey).toBe('bound.order.placed');
      expect(m0.properties).toMatchObject({
        deliveryMode: 2,
        type: 'order.placed',
        contentType: 'application/json',
        correlationId: 'c-0',
      });
      expect(m0.properties.headers).toMatchObject({ 'message-version': '3', 'causation-id': 'cmd' });
      expect(JSON.parse(m0.content.toString())).toEqual({ n: 0 });
      const r = await store.outbox(outbox).receipt(ids[0]!);
      expect(r?.receipt).toMatchObject({
        broker: 'rabbitmq',
        exchange: t.exchange,
        routingKey: 'bound.order.placed',
        confirmed: true,
      });
      expect(r?.receipt.deliveryTag).toBeGreaterThan(0);
    });

    it('treats an unroutable message (mandatory, no binding) as a failed publish that is retried, never a silent ack', async () => {
      const t = await topology();
      const outbox = uid('rmq-unroutable');
      const id = await store.outboxEnqueue(outbox, 'lost?');
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          settings: { retry: { baseMs: 60_000, maxDelayMs: 60_000 } },
          publisher: new RabbitMqPublisher({ url: AMQP_URL, exchange: t.exchange, routingKey: 'nowhere.x' }),
        }),
      );
      try {
        await waitFor(
          'the publish failed and was put back',
          async () => (await store.outbox(outbox).queue.getJob(id))?.lastError?.startsWith('unroutable') === true,
        );
      } finally {
        await run.stop();
      }
      expect(await store.outbox(outbox).queue.getJob(id)).toMatchObject({ state: 'pending', attempts: 1 });
      expect(await store.outbox(outbox).receipt(id)).toBeNull();
    });

    it('reconnects after the broker connection is cut and delivers everything', async () => {
      const t = await topology();
      const proxy = new TcpProxy('127.0.0.1', 5672);
      const port = await proxy.start();
      const outbox = uid('rmq-cut');
      const logger = recordingLogger();
      const d = new OutboxDispatcher({
        store,
        outbox,
        logger,
        settings: { publishTimeoutMs: 2_000, leaseMs: 10_000, retry: { baseMs: 50, maxDelayMs: 200, maxAttempts: 50 } },
        publisher: new RabbitMqPublisher({
          url: `amqp://guest:guest@127.0.0.1:${port}`,
          exchange: t.exchange,
          routingKey: 'bound.x',
          reconnectWaitMs: 20,
        }),
      });
      const run = start(d);
      const ids: number[] = [];
      try {
        for (let round = 0; round < 3; round++) {
          for (let i = 0; i < 20; i++) ids.push(await store.outboxEnqueue(outbox, { round, i }, { maxAttempts: 50 }));
          await waitFor('a connection through the proxy', () => proxy.connections > 0);
          proxy.cut();
        }
        await waitFor('every message acked after the cuts', () => settled(outbox), 20_000);
        await waitFor('the publisher up again', () => d.health().status === 'up');
      } finally {
        await run.stop();
        await proxy.stop();
      }
      const got = new Set((await drain(t.queue)).map((m) => m.properties.messageId));
      for (const id of ids) expect(got.has(store.outbox(outbox).messageId(id))).toBe(true);
      expect(logger.lines.some((l) => l.includes('unreachable'))).toBe(true);
    });

    it('refuses a missing exchange at startup and starts with the server down (logged once, pending, degraded)', async () => {
      const outbox = uid('rmq-bad');
      await expectError(
        () =>
          new OutboxDispatcher({
            store,
            outbox,
            publisher: new RabbitMqPublisher({ url: AMQP_URL, exchange: brokerName('missing'), routingKey: 'x' }),
          }).run(new AbortController().signal),
        InvalidOption,
      );
      const id = await store.outboxEnqueue(outbox, 1);
      const logger = recordingLogger();
      const d = new OutboxDispatcher({
        store,
        outbox,
        logger,
        publisher: new RabbitMqPublisher({
          url: 'amqp://guest:guest@127.0.0.1:1',
          exchange: 'x',
          routingKey: 'x',
          reconnectWaitMs: 20,
        }),
      });
      const run = start(d);
      try {
        await waitFor('the outage logged', () => logger.lines.length > 0);
        await pause(100); // room for more attempts: the proof is the single line
        expect(logger.lines.filter((l) => l.includes('unreachable'))).toHaveLength(1);
        expect(d.health().status).toBe('degraded');
        expect(await store.outbox(outbox).queue.getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
      } finally {
        await run.stop();
      }
    });

    it('dead-letters a message above maxMessageBytes at once; refuses an unknown routing-key template field', async () => {
      const t = await topology();
      const outbox = uid('rmq-big');
      const id = await store.outboxEnqueue(outbox, 'x'.repeat(200));
      const metrics = new RecordingMetrics();
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          metrics,
          logger: recordingLogger(),
          publisher: new RabbitMqPublisher({
            url: AMQP_URL,
            exchange: t.exchange,
            routingKey: 'bound.x',
            maxMessageBytes: 100,
          }),
        }),
      );
      try {
        await waitFor('the message dead', async () => (await store.outbox(outbox).queue.getJob(id))?.state === 'dead');
      } finally {
        await run.stop();
      }
      expect((await store.outbox(outbox).queue.getJob(id))?.lastError).toBe(
        'permanent: message too large for RabbitMQ: 202 bytes, above its maxMessageBytes of 100 bytes',
      );
      expect(metrics.deadReasons).toEqual(['permanent']);
      const err = await expectError(
        () => new RabbitMqPublisher({ exchange: 'e', routingKey: 'a.{nope}' }),
        InvalidOption,
      );
      expect(err.message).toContain('routingKey');
      expect(err.message).toContain('{nope}');
    });
  });
}
