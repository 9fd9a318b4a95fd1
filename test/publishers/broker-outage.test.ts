import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { NatsJetStreamPublisher, RabbitMqPublisher, type Publisher } from '../../lib/publishers/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';
import { withBrokerAdmins, brokerName, createStream, deleteStream, topicQueue } from '../helpers/brokers.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { pause, uid } from '../contract/harness.js';
import { RecordingMetrics, recordingLogger } from './recording-metrics.js';

/** Three attempts of these settings fail within well under a second: the outage below lasts several times that. */
const FAST_FAILURES = {
  publishTimeoutMs: 300,
  leaseMs: 10_000,
  busyPollIntervalMs: 20,
  idlePollIntervalMs: 100,
  retry: { baseMs: 20, maxDelayMs: 50, maxAttempts: 3 },
};
const OUTAGE_MS = 3_000;

/**
 * A broker that becomes unreachable mid-run (every connection cut and new ones refused, through a TCP
 * proxy) must not burn the messages' attempts: with max attempts 3 and an outage many retries long,
 * nothing is dead-lettered and everything is delivered once the broker is back. JetStream and RabbitMQ,
 * on both engines.
 */
for (const engine of contractEngines()) {
  describe(`broker outage mid-run [${engine.name}]`, () => {
    let store: Store;
    withEngineDb(engine, (_db, s) => (store = s));
    const brokers = withBrokerAdmins();

    /** Runs the scenario and returns the delivered message ids as the broker saw them. */
    async function outage(
      publisherFor: (port: number) => Publisher,
      targetPort: number,
      delivered: () => Promise<string[]>,
    ): Promise<void> {
      const proxy = new TcpProxy('127.0.0.1', targetPort);
      const port = await proxy.start();
      const outbox = uid('outage');
      const metrics = new RecordingMetrics();
      const logger = recordingLogger();
      const d = new OutboxDispatcher({
        store,
        outbox,
        metrics,
        logger,
        settings: FAST_FAILURES,
        publisher: publisherFor(port),
      });
      const ac = new AbortController();
      const done = d.run(ac.signal);
      const ids: number[] = [];
      const enqueue = async (n: number): Promise<void> => {
        for (let i = 0; i < n; i++) ids.push(await store.outboxEnqueue(outbox, { i: ids.length }, { maxAttempts: 3 }));
      };
      try {
        await enqueue(20);
        await waitFor('the first messages delivered', () => metrics.published_ >= 5);
        proxy.block();
        await enqueue(30);
        await waitFor('health reports the outage', () => d.health().status === 'degraded');
        // The outage's length, not a proof: three attempts of FAST_FAILURES take well under a second.
        await pause(OUTAGE_MS);
        expect(d.health().status).toBe('degraded');
        expect((await store.outbox(outbox).queue.stats()).dead).toBe(0);
        proxy.unblock();
        await waitFor(
          'every message delivered after the outage',
          async () => {
            const st = await store.outbox(outbox).queue.stats();
            return st.pending + st.processing === 0;
          },
          30_000,
        );
        await waitFor('health up again', () => d.health().status === 'up');
      } finally {
        ac.abort();
        await done;
        await proxy.stop();
      }
      expect(metrics.deadReasons).toEqual([]);
      expect((await store.outbox(outbox).queue.stats()).dead).toBe(0);
      const got = new Set(await delivered());
      expect(ids.filter((id) => !got.has(store.outbox(outbox).messageId(id)))).toEqual([]);
      for (const id of ids) expect((await store.outbox(outbox).receipt(id))?.receipt).toBeDefined();
    }

    it('JetStream: an outage longer than three retries dead-letters nothing and every message is delivered after it', async () => {
      const stream = brokerName('ALKOUT');
      const prefix = stream.toLowerCase();
      await createStream(brokers.nc, stream, prefix);
      brokers.cleanups.push(() => deleteStream(brokers.nc, stream));
      await outage(
        (port) =>
          new NatsJetStreamPublisher({
            stream,
            subject: `${prefix}.x`,
            servers: `127.0.0.1:${port}`,
            reconnectWaitMs: 50,
            connectOptions: { reconnectTimeWait: 100 },
          }),
        4222,
        async () => {
          const { jetstreamManager } = await import('@nats-io/jetstream');
          const jsm = await jetstreamManager(brokers.nc);
          const info = await jsm.streams.info(stream);
          const out: string[] = [];
          for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
            const m = await jsm.streams.getMessage(stream, { seq });
            const id = m?.header?.get('Nats-Msg-Id');
            if (id) out.push(id);
          }
          return out;
        },
      );
    });

    it('RabbitMQ: an outage longer than three retries dead-letters nothing and every message is delivered after it', async () => {
      const { exchange, queue } = await topicQueue(brokers.ch, 'alk.out', '#', brokers.cleanups);
      await outage(
        (port) =>
          new RabbitMqPublisher({
            url: `amqp://guest:guest@127.0.0.1:${port}`,
            exchange,
            routingKey: 'x',
            reconnectWaitMs: 50,
          }),
        5672,
        async () => {
          const out: string[] = [];
          for (;;) {
            const m = await brokers.ch.get(queue, { noAck: true });
            if (m === false) return out;
            out.push(String(m.properties.messageId));
          }
        },
      );
    });
  });
}
