import { describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { NatsJetStreamPublisher, RabbitMqPublisher, type Publisher } from '../../lib/publishers/index.js';
import { contractEngines, waitFor, withEngineDb } from '../helpers/engines.js';
import { withBrokerAdmins, brokerName, createStream, deleteStream, topicQueue } from '../helpers/brokers.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { uid } from '../contract/harness.js';
import { RecordingMetrics, recordingLogger } from './recording-metrics.js';

/**
 * The messages of one claim share one abort signal in a publisher-backed relay. When one of them loses
 * its claim (here: cancelled from another connection while its publish waits for the broker's ack, so
 * the next renewal is refused), every publish of that claim is abandoned: none of them is acked, the
 * lost one is left alone, and the others are released with their attempt given back (not retried, not
 * dead). Once the broker's answers flow again, they are published again (the broker's dedup id absorbs
 * the copy the first publish left) and acked with their receipts. Real database, real brokers; the
 * broker's acks are held back by a TCP proxy.
 */
const SETTINGS = {
  claimSize: 4,
  concurrency: 4,
  // Renewal at 2 s (refused for the cancelled message), long before the 3.9 s publish timeout.
  leaseMs: 4_000,
  publishTimeoutMs: 3_900,
  storeTimeoutMs: 2_000,
  busyPollIntervalMs: 20,
  idlePollIntervalMs: 100,
  retry: { baseMs: 20, maxDelayMs: 50, maxAttempts: 3 },
};

for (const engine of contractEngines()) {
  describe(`one abort signal per claim in a publisher-backed relay [${engine.name}]`, () => {
    let store: Store;
    withEngineDb(engine, (_db, s) => (store = s));
    const brokers = withBrokerAdmins();

    async function leaseLostMidClaim(publisherFor: (port: number) => Publisher, targetPort: number): Promise<void> {
      const proxy = new TcpProxy('127.0.0.1', targetPort);
      const port = await proxy.start();
      const outbox = uid('leaselost');
      const q = store.outbox(outbox).queue;
      const metrics = new RecordingMetrics();
      const d = new OutboxDispatcher({
        store,
        outbox,
        metrics,
        logger: recordingLogger(),
        settings: SETTINGS,
        publisher: publisherFor(port),
      });
      const ac = new AbortController();
      const done = d.run(ac.signal);
      let ids: number[] = [];
      try {
        await waitFor('the publisher connected', () => d.health().status === 'up');
        proxy.hold();
        // One commit: one claim takes all four.
        ids = await store.withTx(async (tx) => {
          const out: number[] = [];
          for (let i = 0; i < 4; i++) out.push(await tx.outboxEnqueue(outbox, { i }));
          return out;
        });
        await waitFor('all four claimed, their acks held back', async () => (await q.stats()).processing === 4);
        // Paused: what is released stays pending to be looked at, instead of being claimed again at once.
        await q.pause();
        expect(await q.cancel(ids[0]!)).toBe(true);
        await waitFor(
          'the other three released by the lost lease of the first',
          async () => (await q.stats()).pending === 3,
          15_000,
        );
        // None acked, no receipt, no attempt burned, nothing retried or dead.
        for (const id of ids.slice(1)) {
          const info = await q.getJob(id);
          expect(info?.state).toBe('pending');
          expect(info?.attempts).toBe(0);
          expect(await store.outbox(outbox).receipt(id)).toBeNull();
        }
        expect((await q.getJob(ids[0]!))?.state).toBe('cancelled');
        expect(metrics.published_).toBe(0);
        expect(metrics.deadReasons).toEqual([]);
        proxy.release();
        await q.resume();
        await waitFor(
          'the three delivered again and acked',
          async () => {
            const st = await q.stats();
            return st.pending + st.processing === 0;
          },
          20_000,
        );
      } finally {
        proxy.release();
        ac.abort();
        await done;
        await proxy.stop();
      }
      for (const id of ids.slice(1)) expect((await store.outbox(outbox).receipt(id))?.receipt).toBeDefined();
      expect(metrics.deadReasons).toEqual([]);
    }

    it('JetStream: a publish timeout ends the claim publishes, each retried as timed out', async () => {
      const stream = brokerName('ALKTO');
      const prefix = stream.toLowerCase();
      await createStream(brokers.nc, stream, prefix);
      brokers.cleanups.push(() => deleteStream(brokers.nc, stream));
      const proxy = new TcpProxy('127.0.0.1', 4222);
      const port = await proxy.start();
      const outbox = uid('timeout');
      const q = store.outbox(outbox).queue;
      const reasons: string[] = [];
      const metrics = Object.assign(new RecordingMetrics(), {
        retried: (reason: string): void => void reasons.push(reason),
      });
      const d = new OutboxDispatcher({
        store,
        outbox,
        metrics,
        logger: recordingLogger(),
        settings: { ...SETTINGS, publishTimeoutMs: 300, retry: { baseMs: 30_000, maxDelayMs: 30_000, maxAttempts: 3 } },
        publisher: new NatsJetStreamPublisher({ stream, subject: `${prefix}.x`, servers: `127.0.0.1:${port}` }),
      });
      const ac = new AbortController();
      const done = d.run(ac.signal);
      try {
        await waitFor('the publisher connected', () => d.health().status === 'up');
        proxy.hold();
        const ids = await store.withTx(async (tx) => {
          const out: number[] = [];
          for (let i = 0; i < 4; i++) out.push(await tx.outboxEnqueue(outbox, { i }));
          return out;
        });
        await waitFor('all four retried', () => reasons.length === 4, 15_000);
        expect(reasons).toEqual(['timeout', 'timeout', 'timeout', 'timeout']);
        for (const id of ids) {
          const info = await q.getJob(id);
          expect(info?.state).toBe('pending');
          expect(info?.attempts).toBe(1);
          expect(info?.lastError).toMatch(/timed out after 300 ms/);
        }
      } finally {
        proxy.release();
        ac.abort();
        await done;
        await proxy.stop();
      }
    });

    it('JetStream: the claim publishes are abandoned, none acked, the others released with their attempt', async () => {
      const stream = brokerName('ALKLL');
      const prefix = stream.toLowerCase();
      await createStream(brokers.nc, stream, prefix);
      brokers.cleanups.push(() => deleteStream(brokers.nc, stream));
      await leaseLostMidClaim(
        (port) =>
          new NatsJetStreamPublisher({
            stream,
            subject: `${prefix}.x`,
            servers: `127.0.0.1:${port}`,
            reconnectWaitMs: 50,
          }),
        4222,
      );
    });

    it('RabbitMQ: the claim publishes are abandoned, none acked, the others released with their attempt', async () => {
      const { exchange } = await topicQueue(brokers.ch, 'alk.ll', '#', brokers.cleanups);
      await leaseLostMidClaim(
        (port) =>
          new RabbitMqPublisher({
            url: `amqp://guest:guest@127.0.0.1:${port}`,
            exchange,
            routingKey: 'x',
            reconnectWaitMs: 50,
          }),
        5672,
      );
    });
  });
}
