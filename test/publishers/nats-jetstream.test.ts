import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NatsConnection } from '@nats-io/transport-node';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { NatsJetStreamPublisher } from '../../lib/publishers/index.js';
import { contractEngines, waitFor, withEngineDb, type EngineDb } from '../helpers/engines.js';
import { brokerName, createStream, deleteStream, natsAdmin } from '../helpers/brokers.js';
import { expectError, pause, uid } from '../contract/harness.js';
import { RecordingMetrics, recordingLogger } from './recording-metrics.js';

/** The NATS JetStream publisher against the real server, on both engines (receipts live in the store). */
for (const engine of contractEngines()) {
  describe(`NATS JetStream publisher [${engine.name}]`, () => {
    let store: Store;
    let db: EngineDb;
    let nc: NatsConnection;
    const streams: string[] = [];
    withEngineDb(engine, (d, s) => {
      db = d;
      store = s;
    });
    beforeAll(async () => {
      nc = await natsAdmin();
    });
    afterAll(async () => {
      for (const s of streams) await deleteStream(nc, s);
      await nc.close();
    });

    async function stream(windowMs = 120_000): Promise<{ name: string; prefix: string }> {
      const name = brokerName('ALK');
      streams.push(name);
      await createStream(nc, name, name.toLowerCase(), windowMs);
      return { name, prefix: name.toLowerCase() };
    }

    async function storedMessages(
      name: string,
    ): Promise<{ subject: string; msgId: string | undefined; headers: Record<string, string>; data: unknown }[]> {
      const { jetstreamManager } = await import('@nats-io/jetstream');
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(name);
      const out = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const m = await jsm.streams.getMessage(name, { seq });
        if (!m) continue;
        const headers: Record<string, string> = {};
        for (const [k] of m.header ?? []) headers[k.toLowerCase()] = m.header!.get(k);
        out.push({ subject: m.subject, msgId: m.header?.get('Nats-Msg-Id'), headers, data: m.json() });
      }
      return out;
    }

    function start(d: OutboxDispatcher): { stop: () => Promise<void>; done: Promise<void> } {
      const ac = new AbortController();
      const done = d.run(ac.signal);
      return {
        done,
        stop: async () => {
          ac.abort();
          await done;
        },
      };
    }

    it('publishes each message once with msgID = outbox id and the envelope as headers, acks on PubAck and stores the receipt', async () => {
      const s = await stream();
      const outbox = uid('js');
      const ids: number[] = [];
      for (let i = 0; i < 10; i++) {
        ids.push(
          await store.withTx((tx) =>
            tx.outboxEnqueue(
              outbox,
              { n: i },
              { envelope: { type: 'order.placed', version: 2, correlationId: `c-${i}` }, orderingKey: `k${i % 2}` },
            ),
          ),
        );
      }
      const d = new OutboxDispatcher({
        store,
        outbox,
        publisher: new NatsJetStreamPublisher({ stream: s.name, subject: `${s.prefix}.{type}.{key}` }),
      });
      const run = start(d);
      try {
        await waitFor(
          'every message acked',
          async () =>
            (await store.outbox(outbox).queue.stats()).pending +
              (await store.outbox(outbox).queue.stats()).processing ===
            0,
        );
        expect(d.health()).toEqual({ status: 'up' });
      } finally {
        await run.stop();
      }
      const msgs = await storedMessages(s.name);
      expect(msgs.map((m) => m.msgId).sort()).toEqual(ids.map(String).sort());
      const first = msgs.find((m) => m.msgId === String(ids[0]))!;
      expect(first).toMatchObject({ subject: `${s.prefix}.order.placed.k0`, data: { n: 0 } });
      expect(first.headers).toMatchObject({
        'message-type': 'order.placed',
        'message-version': '2',
        'content-type': 'application/json',
        'correlation-id': 'c-0',
      });
      const receipt = await store.outbox(outbox).receipt(ids[0]!);
      expect(receipt?.receipt).toMatchObject({ broker: 'nats-jetstream', stream: s.name, duplicate: false });
      expect(typeof receipt?.receipt.seq).toBe('number');
    });

    it('counts a PubAck duplicate (the stream already had the msgID) as success and as a broker duplicate', async () => {
      const s = await stream();
      const outbox = uid('js-dup');
      const id = await store.outboxEnqueue(outbox, { once: true });
      // The "first publish landed but its ack never reached the database" case: the stream already holds the id.
      const { jetstream } = await import('@nats-io/jetstream');
      await jetstream(nc).publish(`${s.prefix}.x`, JSON.stringify({ once: true }), { msgID: String(id) });
      const metrics = new RecordingMetrics();
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          metrics,
          publisher: new NatsJetStreamPublisher({ stream: s.name, subject: `${s.prefix}.x` }),
        }),
      );
      try {
        await waitFor('the message acked', async () => (await store.outbox(outbox).queue.getJob(id)) === null);
      } finally {
        await run.stop();
      }
      expect(metrics.duplicates).toBe(1);
      expect((await storedMessages(s.name)).length).toBe(1);
      expect((await store.outbox(outbox).receipt(id))?.receipt).toMatchObject({ duplicate: true, seq: 1 });
    });

    it('refuses at startup a stream whose duplicate_window is shorter than the retry horizon, naming both numbers', async () => {
      const s = await stream(10_000);
      const outbox = uid('js-window');
      await store.outboxEnqueue(outbox, 1);
      const d = new OutboxDispatcher({
        store,
        outbox,
        settings: { leaseMs: 30_000 },
        publisher: new NatsJetStreamPublisher({ stream: s.name, subject: `${s.prefix}.x` }),
      });
      const err = await expectError(() => d.run(new AbortController().signal), InvalidOption);
      expect(err.message).toContain('duplicate_window');
      expect(err.message).toContain('10000 ms');
      expect(err.message).toContain('108000 ms'); // 30 000 lease + 10 000 publish timeout + 8 000 backoff + 60 000 restart
      expect((await store.outbox(outbox).queue.stats()).pending).toBe(1);
    });

    it('starts with the server down: logs it once, claims nothing, health says degraded', async () => {
      const outbox = uid('js-down');
      const id = await store.outboxEnqueue(outbox, 1);
      const logger = recordingLogger();
      const d = new OutboxDispatcher({
        store,
        outbox,
        logger,
        publisher: new NatsJetStreamPublisher({
          stream: 'NONE',
          subject: 'x',
          servers: '127.0.0.1:1',
          reconnectWaitMs: 20,
        }),
      });
      const run = start(d);
      try {
        await waitFor('the outage logged', () => logger.lines.length > 0);
        await pause(100); // room for several more attempts (20 ms apart): the proof is the single log line below
        expect(d.health().status).toBe('degraded');
        expect(logger.lines.filter((l) => l.includes('unreachable'))).toHaveLength(1);
        expect(await store.outbox(outbox).queue.getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
      } finally {
        await run.stop();
      }
      expect(d.health().status).toBe('down');
    });

    it('dead-letters a message larger than the server max_payload at once, with that reason', async () => {
      const s = await stream();
      const outbox = uid('js-big');
      // A store whose own payload limit is above the broker's: the broker's refusal is what this pins.
      const big = await db.open({ maxPayloadBytes: 4 * nc.info!.max_payload });
      const id = await big.outboxEnqueue(outbox, 'x'.repeat(nc.info!.max_payload + 10));
      const metrics = new RecordingMetrics();
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          metrics,
          logger: recordingLogger(),
          publisher: new NatsJetStreamPublisher({ stream: s.name, subject: `${s.prefix}.x` }),
        }),
      );
      try {
        await waitFor('the message dead', async () => (await store.outbox(outbox).queue.getJob(id))?.state === 'dead');
      } finally {
        await run.stop();
      }
      const job = await store.outbox(outbox).queue.getJob(id);
      expect(job?.lastError).toMatch(
        /^permanent: message too large for NATS: \d+ bytes, above its max_payload of \d+ bytes$/,
      );
      expect(job?.attempts).toBe(1);
      expect(metrics.deadReasons).toEqual(['permanent']);
    });

    it('refuses bad options before any I/O: an unknown subject template field, a missing stream, a dispatcher with both handler and publisher', async () => {
      await expectError(() => new NatsJetStreamPublisher({ stream: 'S', subject: 'orders.{tpye}' }), InvalidOption);
      const err = await expectError(
        () => new NatsJetStreamPublisher({ stream: 'S', subject: 'orders.{tpye}' }),
        InvalidOption,
      );
      expect(err.message).toContain('{tpye}');
      expect(err.message).toContain('subject');
      await expectError(() => new NatsJetStreamPublisher({ stream: '', subject: 'x' }), InvalidOption);
      const publisher = new NatsJetStreamPublisher({ stream: 'S', subject: 'x' });
      await expectError(
        () => new OutboxDispatcher({ store, outbox: 'o', publisher, handler: async () => undefined }),
        InvalidOption,
      );
      await expectError(() => new OutboxDispatcher({ store, outbox: 'o' }), InvalidOption);
    });
  });
}
