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

    it('publishes each message once with msgID = the message id (<storeId>:<rowId>) and the envelope as headers, acks on PubAck and stores the receipt', async () => {
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
      const messageIds = ids.map((id) => `${store.storeId}:${id}`);
      expect(msgs.map((m) => m.msgId).sort()).toEqual([...messageIds].sort());
      const first = msgs.find((m) => m.msgId === messageIds[0])!;
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

    it('a PubAck duplicate on a first publish (another producer used the id): success, a broker duplicate, and one warning per outbox naming the id', async () => {
      const s = await stream();
      const outbox = uid('js-dup');
      const ids = [await store.outboxEnqueue(outbox, { n: 1 }), await store.outboxEnqueue(outbox, { n: 2 })];
      const ob = store.outbox(outbox);
      // Another producer already put both ids in the stream.
      const { jetstream } = await import('@nats-io/jetstream');
      for (const id of ids)
        await jetstream(nc).publish(`${s.prefix}.x`, JSON.stringify({ other: id }), { msgID: ob.messageId(id) });
      const metrics = new RecordingMetrics();
      const logger = recordingLogger();
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          metrics,
          logger,
          publisher: new NatsJetStreamPublisher({ stream: s.name, subject: `${s.prefix}.x` }),
        }),
      );
      try {
        await waitFor(
          'the messages acked',
          async () => (await ob.queue.stats()).pending === 0 && (await ob.queue.stats()).processing === 0,
        );
      } finally {
        await run.stop();
      }
      expect(metrics.duplicates).toBe(2);
      expect((await storedMessages(s.name)).length).toBe(2);
      expect((await ob.receipt(ids[0]!))?.receipt).toMatchObject({ duplicate: true });
      const warnings = logger.lines.filter((l) => l.includes('first publish'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(JSON.stringify(outbox));
      expect(ids.some((id) => warnings[0]!.includes(ob.messageId(id)))).toBe(true);
    });

    it('a PubAck duplicate on a later attempt (the first publish landed, its ack never reached the database) is absorbed quietly: success and a broker duplicate, no warning', async () => {
      const s = await stream();
      const outbox = uid('js-redup');
      const ob = store.outbox(outbox);
      const id = await ob.enqueue({ once: true });
      // Attempt 1 published and then failed before its ack: the stream holds the id, the row is pending again.
      const { jetstream } = await import('@nats-io/jetstream');
      await jetstream(nc).publish(`${s.prefix}.x`, JSON.stringify({ once: true }), { msgID: ob.messageId(id) });
      const job = await ob.queue.claimOne('attempt-1');
      expect(job?.id).toBe(id);
      await job!.retry(new Error('the ack was lost'), 0);
      const metrics = new RecordingMetrics();
      const logger = recordingLogger();
      const run = start(
        new OutboxDispatcher({
          store,
          outbox,
          metrics,
          logger,
          publisher: new NatsJetStreamPublisher({ stream: s.name, subject: `${s.prefix}.x` }),
        }),
      );
      try {
        await waitFor('the message acked', async () => (await ob.queue.getJob(id)) === null);
      } finally {
        await run.stop();
      }
      expect(metrics.duplicates).toBe(1);
      expect((await storedMessages(s.name)).length).toBe(1);
      expect((await ob.receipt(id))?.receipt).toMatchObject({ duplicate: true, seq: 1 });
      expect(logger.lines).toEqual([]);
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
