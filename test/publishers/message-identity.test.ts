import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Channel, ChannelModel } from 'amqplib';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Store, StoreLogger, TxOps } from '../../lib/contract/types.js';
import { JetStreamInboxConsumer, RabbitMqInboxConsumer, type InboxMessage } from '../../lib/inbox/index.js';
import { OutboxDispatcher } from '../../lib/outbox/index.js';
import { NatsJetStreamPublisher, RabbitMqPublisher, type Publisher } from '../../lib/publishers/index.js';
import {
  contractEngines,
  describePg,
  forgetStoreIdentity,
  PG_URL,
  sqliteFile,
  waitFor,
  type EngineDb,
} from '../helpers/engines.js';
import { AMQP_URL, brokerName, createStream, deleteStream, natsAdmin, topicQueue } from '../helpers/brokers.js';
import { uid } from '../contract/harness.js';

const quiet: StoreLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

interface Note {
  readonly from: string;
  readonly n: number;
}

/** Runs a dispatcher of `outbox` until everything it has is delivered, then stops it. */
async function deliverAll(store: Store, outbox: string, publisher: Publisher): Promise<void> {
  const ac = new AbortController();
  const done = new OutboxDispatcher({ store, outbox, publisher, logger: quiet }).run(ac.signal);
  try {
    await waitFor(
      `outbox ${outbox} delivered`,
      async () => {
        const st = await store.outbox(outbox).queue.stats();
        return st.pending + st.processing === 0;
      },
      30_000,
    );
  } finally {
    ac.abort();
    await done;
  }
}

/** Enqueues `count` notes from `from` on `outbox`. */
async function produce(store: Store, outbox: string, from: string, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let n = 0; n < count; n++)
    ids.push(await store.withTx((tx) => tx.outboxEnqueue(outbox, { from, n }, { envelope: { type: 'note' } })));
  return ids;
}

/** The inbox effect: one row per handled message, written in the inbox transaction. */
function effect(queue: string): (tx: TxOps, m: InboxMessage<Note>) => Promise<void> {
  return async (tx, m) => void (await tx.enqueue(queue, { ...m.payload, messageId: m.messageId }));
}

/** The effects written so far, as `<from>:<n>`, sorted. */
async function effects(store: Store, queue: string): Promise<string[]> {
  const { jobs } = await store.admin().listJobs(queue, { limit: 1000 });
  return jobs.map((j) => `${(j.payload as Note).from}:${(j.payload as Note).n}`).sort();
}

function expected(froms: string[], count: number): string[] {
  return froms.flatMap((f) => Array.from({ length: count }, (_, n) => `${f}:${n}`)).sort();
}

/** JetStream: the stream's message count, and an inbox consumer run over a durable consumer until every message is acked. */
async function consumeJetStream(nc: NatsConnection, consumer: Store, stream: string): Promise<string[]> {
  const { jetstreamManager, AckPolicy } = await import('@nats-io/jetstream');
  const jsm = await jetstreamManager(nc);
  const durable = uid('inbox').replace(/[^A-Za-z0-9_-]/g, '_');
  await jsm.consumers.add(stream, { durable_name: durable, ack_policy: AckPolicy.Explicit, ack_wait: 5_000_000_000 });
  const queue = uid('effects');
  const ac = new AbortController();
  const run = new JetStreamInboxConsumer<Note>({
    store: consumer,
    inbox: uid('billing'),
    connection: nc,
    stream,
    consumer: durable,
    batch: 8,
    handler: effect(queue),
    logger: quiet,
  }).run(ac.signal);
  try {
    await waitFor(
      'every stream message acked by the inbox consumer',
      async () => {
        const info = await jsm.consumers.info(stream, durable);
        return info.num_pending + info.num_ack_pending === 0 && info.delivered.stream_seq > 0;
      },
      30_000,
    );
  } finally {
    ac.abort();
    await run;
  }
  return effects(consumer, queue);
}

/** RabbitMQ: an inbox consumer of `queue` run until `count` effects are written (or 15 s), then stopped. */
async function consumeRabbit(ch: Channel, consumer: Store, queue: string, count: number): Promise<string[]> {
  const effectQueue = uid('effects');
  const ac = new AbortController();
  const run = new RabbitMqInboxConsumer<Note>({
    store: consumer,
    inbox: uid('billing'),
    url: AMQP_URL,
    queue,
    handler: effect(effectQueue),
    logger: quiet,
  }).run(ac.signal);
  try {
    // An inbox that skips a message leaves fewer effects: the assertion after this shows which.
    await waitFor(
      `${count} messages handled`,
      async () => (await effects(consumer, effectQueue)).length >= count,
      15_000,
    ).catch(() => undefined);
    await waitFor('the queue drained', async () => (await ch.checkQueue(queue)).messageCount === 0, 15_000);
  } finally {
    ac.abort();
    await run;
  }
  return effects(consumer, effectQueue);
}

const COUNT = 5;

/**
 * Two stores (two SQLite files; two PostgreSQL schemas), each with a fresh outbox `orders` whose rows
 * are 1..5 in both, publish into ONE JetStream stream and ONE RabbitMQ queue: every message is
 * stored, and an inbox consumer handles each exactly once.
 */
for (const engine of contractEngines()) {
  describe(`message ids across stores, real brokers [${engine.name}]`, () => {
    const dbs: EngineDb[] = [];
    let a: Store;
    let b: Store;
    let consumer: Store;
    let nc: NatsConnection;
    let conn: ChannelModel;
    let ch: Channel;
    const streams: string[] = [];
    const cleanups: (() => Promise<unknown>)[] = [];
    beforeAll(async () => {
      for (let i = 0; i < 3; i++) dbs.push(await engine.create());
      [a, b, consumer] = await Promise.all(dbs.map((d) => d.open()));
      nc = await natsAdmin();
      const amqp = await import('amqplib');
      conn = await amqp.connect(AMQP_URL);
      ch = await conn.createChannel();
    }, 60_000);
    afterAll(async () => {
      for (const c of cleanups) await c().catch(() => undefined);
      for (const s of streams) await deleteStream(nc, s);
      await conn?.close();
      await nc?.close();
      for (const d of dbs) await d.destroy();
    }, 60_000);

    it('JetStream: both stores publish rows 1..5 of outbox "orders" into one stream; the stream keeps all 10, the inbox handles each once', async () => {
      const stream = brokerName('IDS');
      streams.push(stream);
      const prefix = stream.toLowerCase();
      await createStream(nc, stream, prefix);
      const outbox = 'orders';
      const ia = await produce(a, outbox, 'a', COUNT);
      const ib = await produce(b, outbox, 'b', COUNT);
      expect(ib).toEqual(ia);
      for (const s of [a, b])
        await deliverAll(s, outbox, new NatsJetStreamPublisher({ stream, subject: `${prefix}.{type}` }));
      const { jetstreamManager } = await import('@nats-io/jetstream');
      const info = await (await jetstreamManager(nc)).streams.info(stream);
      expect(info.state.messages).toBe(2 * COUNT);
      expect(await consumeJetStream(nc, consumer, stream)).toEqual(expected(['a', 'b'], COUNT));
    });

    it('RabbitMQ: both stores publish rows 1..5 of outbox "orders" into one queue; the queue holds all 10, the inbox handles each once', async () => {
      const { exchange, queue } = await topicQueue(ch, 'alk.ids', '#', cleanups);
      const outbox = 'orders';
      await produce(a, outbox, 'a', COUNT);
      await produce(b, outbox, 'b', COUNT);
      for (const s of [a, b])
        await deliverAll(s, outbox, new RabbitMqPublisher({ url: AMQP_URL, exchange, routingKey: 'orders.{type}' }));
      expect((await ch.checkQueue(queue)).messageCount).toBe(2 * COUNT);
      expect(await consumeRabbit(ch, consumer, queue, 2 * COUNT)).toEqual(expected(['a', 'b'], COUNT));
    });

    it('an inbox row of a message published before the upgrade (its bare row id) still absorbs a redelivery of it, and not a new message of the same row id', async () => {
      const { exchange, queue } = await topicQueue(ch, 'alk.ids-old', '#', cleanups);
      const fresh = await engine.create();
      dbs.push(fresh);
      const producer = await fresh.open();
      const outbox = uid('orders');
      const [row] = await produce(producer, outbox, 'new', 1);
      const old = Buffer.from(JSON.stringify({ from: 'old', n: 0 }));
      const inbox = uid('billing');
      const effectQueue = uid('effects');
      const consumerOptions = {
        store: consumer,
        inbox,
        url: AMQP_URL,
        queue,
        handler: effect(effectQueue),
        logger: quiet,
      };
      // Before the upgrade: a producer's message `row` went out with its bare row id and was handled.
      ch.sendToQueue(queue, old, { messageId: String(row), persistent: true });
      const before = new AbortController();
      const first = new RabbitMqInboxConsumer<Note>(consumerOptions).run(before.signal);
      try {
        await waitFor('the old message handled', async () => (await effects(consumer, effectQueue)).length === 1);
      } finally {
        before.abort();
        await first;
      }
      expect((await consumer.inbox(inbox).get(String(row)))?.state).toBe('done');
      // After it: the old message comes again (a redelivery), and this store's row of the same number is published.
      ch.sendToQueue(queue, old, { messageId: String(row), persistent: true });
      await deliverAll(producer, outbox, new RabbitMqPublisher({ url: AMQP_URL, exchange, routingKey: 'x' }));
      const after = new AbortController();
      const second = new RabbitMqInboxConsumer<Note>(consumerOptions).run(after.signal);
      try {
        await waitFor('both handled or skipped', async () => (await ch.checkQueue(queue)).messageCount === 0);
        await waitFor(
          'the new message handled',
          async () => (await effects(consumer, effectQueue)).length >= 2,
          5_000,
        ).catch(() => undefined);
      } finally {
        after.abort();
        await second;
      }
      expect(await effects(consumer, effectQueue)).toEqual(['new:0', 'old:0']);
    });

    it('a message published with its bare row id before the upgrade and published again after it is absorbed by JetStream', async () => {
      const stream = brokerName('IDSUP');
      streams.push(stream);
      const prefix = stream.toLowerCase();
      await createStream(nc, stream, prefix);
      const db = await engine.create();
      dbs.push(db);
      const before = await db.open();
      const outbox = uid('orders');
      const [row] = await produce(before, outbox, 'before', 1);
      await before.close();
      await forgetStoreIdentity(engine.kind, db.location);
      // The dispatcher of the old version published it (Nats-Msg-Id: the bare row id) and stopped before its ack.
      const { jetstream, jetstreamManager } = await import('@nats-io/jetstream');
      await jetstream(nc).publish(`${prefix}.note`, JSON.stringify({ from: 'before', n: 0 }), { msgID: String(row) });
      const upgraded = await db.open();
      await produce(upgraded, outbox, 'after', 1);
      await deliverAll(upgraded, outbox, new NatsJetStreamPublisher({ stream, subject: `${prefix}.{type}` }));
      expect((await (await jetstreamManager(nc)).streams.info(stream)).state.messages).toBe(2);
      expect((await upgraded.outbox(outbox).receipt(row!))?.receipt).toMatchObject({ duplicate: true, seq: 1 });
      expect(await consumeJetStream(nc, consumer, stream)).toEqual(['after:0', 'before:0']);
    });
  });
}

/**
 * A PostgreSQL database dropped and created again (a development reset): its second life hands out
 * the same row ids again, under a new store id. Both lives publish into one stream and one queue.
 */
describePg('message ids across a dropped and re-created PostgreSQL database, real brokers', () => {
  const database = `alk_ids_${process.pid}_${Date.now().toString(36)}`;
  const url = PG_URL.replace(/\/[^/?]*(\?|$)/, `/${database}$1`);
  let admin: import('pg').Client;
  let consumerDb: EngineDb;
  let consumer: Store;
  let nc: NatsConnection;
  let conn: ChannelModel;
  let ch: Channel;
  const cleanups: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    const pg = (await import('pg')).default;
    admin = new pg.Client({ connectionString: PG_URL });
    await admin.connect();
    consumerDb = await sqliteFile.create();
    consumer = await consumerDb.open();
    nc = await natsAdmin();
    const amqp = await import('amqplib');
    conn = await amqp.connect(AMQP_URL);
    ch = await conn.createChannel();
  }, 60_000);
  afterAll(async () => {
    for (const c of cleanups) await c().catch(() => undefined);
    await conn?.close();
    await nc?.close();
    await consumerDb?.destroy();
    await admin?.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin?.end();
  }, 60_000);

  it('both lives publish rows of the same numbers into one stream and one queue: every message is stored, the inboxes handle each once', async () => {
    const stream = brokerName('IDSDB');
    const prefix = stream.toLowerCase();
    await createStream(nc, stream, prefix);
    cleanups.push(() => deleteStream(nc, stream));
    const { exchange, queue } = await topicQueue(ch, 'alk.ids-db', '#', cleanups);
    const { openPostgresStore } = await import('../../lib/engines/postgres/index.js');
    const storeIds: string[] = [];
    const rows: number[][] = [];
    for (const life of ['first', 'second']) {
      await admin.query(`CREATE DATABASE "${database}"`);
      const store = await openPostgresStore({ connectionString: url, poolSize: 2, logger: quiet });
      try {
        storeIds.push(store.storeId);
        rows.push(await produce(store, 'orders-js', life, COUNT));
        await produce(store, 'orders-rmq', life, COUNT);
        await deliverAll(store, 'orders-js', new NatsJetStreamPublisher({ stream, subject: `${prefix}.{type}` }));
        await deliverAll(store, 'orders-rmq', new RabbitMqPublisher({ url: AMQP_URL, exchange, routingKey: 'x' }));
      } finally {
        await store.close();
      }
      await admin.query(`DROP DATABASE "${database}" WITH (FORCE)`);
    }
    expect(rows[1]).toEqual(rows[0]);
    const { jetstreamManager } = await import('@nats-io/jetstream');
    expect((await (await jetstreamManager(nc)).streams.info(stream)).state.messages).toBe(2 * COUNT);
    expect((await ch.checkQueue(queue)).messageCount).toBe(2 * COUNT);
    expect(storeIds[1]).not.toBe(storeIds[0]);
    expect(await consumeJetStream(nc, consumer, stream)).toEqual(expected(['first', 'second'], COUNT));
    expect(await consumeRabbit(ch, consumer, queue, 2 * COUNT)).toEqual(expected(['first', 'second'], COUNT));
  });
});
