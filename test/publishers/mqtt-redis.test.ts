import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { MqttClient } from 'mqtt';
import type { Redis } from 'ioredis';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { MqttPublisher, RedisStreamsPublisher } from '../../lib/publishers/index.js';
import { checkIdmpWindow, probeRedisIdmp, REDIS_NO_DEDUP } from '../../lib/publishers/redis-streams.js';
import { publisherContext } from '../../lib/outbox/publisher-delivery.js';
import { OutboxSettings } from '../../lib/outbox/outbox-settings.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';
import { MQTT_URL, REDIS_URL, brokerName, requireBroker } from '../helpers/brokers.js';
import { expectError, pause, uid } from '../contract/harness.js';
import { RecordingMetrics, recordingLogger } from './recording-metrics.js';
import { readEnvelope } from '../../lib/index.js';

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

/** MQTT 5 (Mosquitto) and Redis Streams publishers against the real servers, on both engines. */
for (const engine of contractEngines()) {
  describe(`MQTT and Redis Streams publishers [${engine.name}]`, () => {
    let store: Store;
    let sub: MqttClient;
    let redis: Redis;
    withEngineDb(engine, (_db, s) => (store = s));
    beforeAll(async () => {
      await requireBroker('Mosquitto', MQTT_URL.replace('mqtt://', ''));
      await requireBroker('Redis', REDIS_URL.replace('redis://', ''));
      const mqtt = await import('mqtt');
      sub = await mqtt.connectAsync(MQTT_URL, { protocolVersion: 5 });
      const { Redis: RedisCtor } = await import('ioredis');
      redis = new RedisCtor(REDIS_URL);
    });
    afterAll(async () => {
      await sub?.endAsync();
      redis?.disconnect();
    });

    const settled = async (outbox: string): Promise<boolean> => {
      const st = await store.outbox(outbox).queue.stats();
      return st.pending + st.processing === 0;
    };

    it('MQTT: publishes at QoS 1 with the message id (<storeId>:<rowId>) and the envelope as user properties, acked on PUBACK, receipt stored', async () => {
      const root = brokerName('alk');
      const got: { topic: string; body: unknown; props: Record<string, unknown>; qos: number }[] = [];
      sub.on('message', (topic, payload, packet) => {
        if (topic.startsWith(root))
          got.push({
            topic,
            body: JSON.parse(payload.toString()),
            props: (packet.properties?.userProperties ?? {}) as Record<string, unknown>,
            qos: packet.qos,
          });
      });
      await sub.subscribeAsync(`${root}/#`, { qos: 1 });
      const outbox = uid('mqtt');
      const ids: number[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(
          await store.outboxEnqueue(outbox, { i }, { envelope: { type: 'order.placed', correlationId: `c${i}` } }),
        );
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          publisher: new MqttPublisher({ url: MQTT_URL, topic: `${root}/{type}` }),
        }),
      );
      try {
        await waitFor('every message acked', () => settled(outbox));
        await waitFor('every message received', () => got.length >= 5);
      } finally {
        await run.stop();
      }
      const messageIds = ids.map((id) => store.outbox(outbox).messageId(id));
      expect(messageIds[0]).toBe(`${store.storeId}:${ids[0]}`);
      expect(got.map((g) => g.props['message-id']).sort()).toEqual([...messageIds].sort());
      expect(got[0]).toMatchObject({ topic: `${root}/order.placed`, qos: 1 });
      expect(got[0]!.props).toMatchObject({ 'message-type': 'order.placed', 'content-type': 'application/json' });
      expect((await store.outbox(outbox).receipt(ids[0]!))?.receipt).toMatchObject({
        broker: 'mqtt',
        topic: `${root}/order.placed`,
        qos: 1,
      });
    });

    it('MQTT: refuses QoS 0 and an unknown topic field; with the broker down it logs once and keeps messages pending', async () => {
      await expectError(() => new MqttPublisher({ topic: 'a', qos: 0 as never }), InvalidOption);
      const err = await expectError(() => new MqttPublisher({ topic: 'a/{bogus}' }), InvalidOption);
      expect(err.message).toContain('{bogus}');
      const outbox = uid('mqtt-down');
      const id = await store.outboxEnqueue(outbox, 1);
      const logger = recordingLogger();
      const d = new OutboxDispatcher({
        store,
        outbox,
        logger,
        publisher: new MqttPublisher({ url: 'mqtt://127.0.0.1:1', topic: 'x', reconnectWaitMs: 20 }),
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

    it('Redis Streams: XADDs the message id (<storeId>:<rowId>), payload and headers, acked on the reply, receipt with the entry id', async () => {
      const key = brokerName('alk:stream');
      const outbox = uid('redis');
      const ids: number[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(await store.outboxEnqueue(outbox, { i }, { envelope: { type: 'order.placed' } }));
      const run = start(
        new OutboxDispatcher({ store, outbox, publisher: new RedisStreamsPublisher({ url: REDIS_URL, stream: key }) }),
      );
      try {
        await waitFor('every message acked', () => settled(outbox));
      } finally {
        await run.stop();
      }
      const entries = await redis.xrange(key, '-', '+');
      await redis.del(key);
      const fields = entries.map(([entryId, kv]) => ({
        entryId,
        ...Object.fromEntries(Array.from({ length: kv.length / 2 }, (_, j) => [kv[2 * j]!, kv[2 * j + 1]!])),
      })) as { entryId: string; id: string; payload: string; headers: string }[];
      const messageIds = ids.map((id) => `${store.storeId}:${id}`);
      expect(fields.map((f) => f.id).sort()).toEqual([...messageIds].sort());
      const f0 = fields.find((f) => f.id === messageIds[0])!;
      expect(JSON.parse(f0.payload)).toEqual({ i: 0 });
      expect(JSON.parse(f0.headers)).toMatchObject({ 'message-type': 'order.placed' });
      expect((await store.outbox(outbox).receipt(ids[0]!))?.receipt).toEqual({
        broker: 'redis-streams',
        stream: key,
        entryId: f0.entryId,
        aof: false,
      });
    });

    it('Redis Streams: IDMP is probed once at connect without writing; this server without it (Redis < 8.6) gets the fallback: said once in the log and in health, the id in a field, a republish a second entry', async () => {
      const version = /redis_version:(\d+)\.(\d+)/.exec(await redis.info('server'))!;
      const hasIdmp = Number(version[1]) > 8 || (Number(version[1]) === 8 && Number(version[2]) >= 6);
      const keysBefore = (await redis.keys('__alkstore:idmp-probe:*')).length;
      const probe = await probeRedisIdmp(redis);
      expect(probe.supported).toBe(hasIdmp);
      expect((await redis.keys('__alkstore:idmp-probe:*')).length).toBe(keysBefore);

      const key = brokerName('alk:idmp');
      const outbox = uid('redis-idmp');
      const logger = recordingLogger();
      const publisher = new RedisStreamsPublisher({ url: REDIS_URL, stream: key });
      expect(publisher.dedup).toBe('unknown');
      const d = new OutboxDispatcher({
        store,
        outbox,
        logger,
        publisher,
        settings: { leaseMs: 10_000, publishTimeoutMs: 5_000, retry: { maxAttempts: 2, baseMs: 100, maxDelayMs: 100 } },
        restartAllowanceMs: 1_000,
      });
      const id = await store.outboxEnqueue(outbox, { n: 1 });
      const run = start(d);
      try {
        await waitFor('the message acked', () => settled(outbox));
        expect(publisher.dedup).toBe(hasIdmp ? 'idmp' : 'none');
        if (!hasIdmp) {
          expect(d.health()).toEqual({ status: 'up', detail: REDIS_NO_DEDUP });
          expect(logger.lines.filter((l) => l.includes('no broker-side dedup'))).toHaveLength(1);
        }
        // The same message published again (a republish after a lost reply): a second entry without IDMP.
        const again = {
          id: store.outbox(outbox).messageId(id),
          rowId: id,
          outbox,
          payload: { n: 1 },
          headers: {},
          envelope: readEnvelope(store.outbox(outbox).messageId(id), {}),
          attempts: 2,
          key: null,
        };
        await publisher.publish(again, new AbortController().signal);
      } finally {
        await run.stop();
      }
      const entries = await redis.xrange(key, '-', '+');
      await redis.del(key);
      const messageId = `${store.storeId}:${id}`;
      expect(entries.map(([, kv]) => kv[kv.indexOf('id') + 1])).toEqual(hasIdmp ? [messageId] : [messageId, messageId]);
    });

    it('Redis Streams: an IDMP window shorter than the retry horizon is refused naming both numbers; idmp and producerId are checked before any I/O', async () => {
      const ctx = publisherContext(
        'orders',
        OutboxSettings.create({
          leaseMs: 30_000,
          publishTimeoutMs: 10_000,
          retry: { maxAttempts: 3, baseMs: 1_000, maxDelayMs: 5_000 },
        }),
        60_000,
        recordingLogger(),
        undefined,
      );
      const err = await expectError(() => checkIdmpWindow('orders:s', 100, ctx), InvalidOption);
      expect(err.message).toContain('IDMP-DURATION');
      expect(err.message).toContain('100000 ms');
      expect(err.message).toContain(`${ctx.retryHorizonMs} ms`);
      expect(err.message).toContain(`XCFGSET orders:s IDMP-DURATION ${Math.ceil(ctx.retryHorizonMs / 1000)}`);
      expect(() => checkIdmpWindow('orders:s', Math.ceil(ctx.retryHorizonMs / 1000), ctx)).not.toThrow();
      expect(
        (await expectError(() => new RedisStreamsPublisher({ stream: 's', idmp: 'on' as never }), InvalidOption))
          .message,
      ).toContain('idmp');
      expect(
        (await expectError(() => new RedisStreamsPublisher({ stream: 's', producerId: '' }), InvalidOption)).message,
      ).toContain('producerId');
    });

    it('Redis Streams: starts with the server down: logs it once, claims nothing, health says degraded; an unknown stream template field is refused', async () => {
      const err = await expectError(() => new RedisStreamsPublisher({ stream: 'orders:{bogus}' }), InvalidOption);
      expect(err.message).toContain('{bogus}');
      const outbox = uid('redis-down');
      const id = await store.outboxEnqueue(outbox, 1);
      const logger = recordingLogger();
      const d = new OutboxDispatcher({
        store,
        outbox,
        logger,
        publisher: new RedisStreamsPublisher({
          url: 'redis://127.0.0.1:1',
          stream: 'x',
          reconnectWaitMs: 20,
          redisOptions: { retryStrategy: () => null },
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

    it('Redis Streams: waitAof on a server without appendonly is refused at startup; a message above maxMessageBytes is dead at once', async () => {
      const [, aof] = (await redis.config('GET', 'appendonly')) as [string, string];
      const outbox = uid('redis-bad');
      if (aof !== 'yes') {
        const err = await expectError(
          () =>
            new OutboxDispatcher({
              store,
              outbox,
              publisher: new RedisStreamsPublisher({
                url: REDIS_URL,
                stream: 'x',
                waitAof: { local: 1, replicas: 0, timeoutMs: 100 },
              }),
            }).run(new AbortController().signal),
          InvalidOption,
        );
        expect(err.message).toContain('appendonly');
      }
      const id = await store.outboxEnqueue(outbox, 'x'.repeat(100));
      const metrics = new RecordingMetrics();
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          metrics,
          logger: recordingLogger(),
          publisher: new RedisStreamsPublisher({ url: REDIS_URL, stream: brokerName('alk:big'), maxMessageBytes: 50 }),
        }),
      );
      try {
        await waitFor('the message dead', async () => (await store.outbox(outbox).queue.getJob(id))?.state === 'dead');
      } finally {
        await run.stop();
      }
      expect((await store.outbox(outbox).queue.getJob(id))?.lastError).toBe(
        'permanent: message too large for Redis: 102 bytes, above its maxMessageBytes of 50 bytes',
      );
      expect(metrics.deadReasons).toEqual(['permanent']);
    });
  });
}
