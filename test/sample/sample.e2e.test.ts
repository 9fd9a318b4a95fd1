import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { SampleConfig } from '../../sample/config.js';
import {
  AlkstoreTestKit,
  AlkstoreTesting,
  createTestDatabase,
  type AlkstoreTestDatabase,
} from '../../lib/nest/testing/index.js';
import { PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';

// The report's spec is a decorator argument, read when the sample is loaded: set it first, then import.
const previousSpec = process.env.REPORT_SPEC;
process.env.REPORT_SPEC = '@every 1s';
const { AppModule } = await import('../../sample/app.module.js');
const { CONFIRMATION_EMAILS, ORDER_CREATED, REPORT_SCHEDULE } = await import('../../sample/orders/handles.js');
if (previousSpec === undefined) delete process.env.REPORT_SPEC;
else process.env.REPORT_SPEC = previousSpec;

interface OrderBody {
  id: number;
  customer: string;
  item: string;
  quantity: number;
}

const engines = PG_AVAILABLE ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

for (const engine of engines) {
  describe(`sample orders app over HTTP (${engine}), with alkstore/testing`, () => {
    let db: AlkstoreTestDatabase;
    let app: INestApplication;
    let kit: AlkstoreTestKit;
    const http = () => request(app.getHttpServer());

    beforeAll(async () => {
      db = await createTestDatabase(engine === 'postgres' ? { postgresUrl: PG_URL } : {});
      const config: SampleConfig =
        db.engine === 'sqlite'
          ? { sqlitePath: db.path! }
          : {
              sqlitePath: '/nonexistent',
              databaseUrl: db.url,
              databaseSchema: await db.appSchema(),
              alkstoreSchema: db.schema,
            };
      // Manual mode: handlers run when the test drains, so every step below is deterministic.
      const moduleRef = await AlkstoreTesting.manual(
        Test.createTestingModule({ imports: [AppModule.forRoot(config)] }),
      ).compile();
      app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
      await app.init();
      kit = AlkstoreTestKit.from(app);
    });
    afterAll(async () => {
      await app?.close();
      await db?.drop();
    });

    it('POST /orders saves the order with its outbox message; draining delivers it and sends the confirmation email', async () => {
      const created = await http().post('/orders').send({ customer: 'Ada', item: 'keyboard', quantity: 2 }).expect(201);
      const order = created.body as OrderBody;
      expect(order).toMatchObject({ customer: 'Ada', item: 'keyboard', quantity: 2 });
      expect((await http().get(`/orders/${order.id}`).expect(200)).body).toMatchObject({
        id: order.id,
        customer: 'Ada',
      });
      expect(((await http().get('/orders').expect(200)).body as OrderBody[]).map((o) => o.id)).toContain(order.id);

      // Committed with the order, not delivered yet.
      expect(await kit.outboxed(ORDER_CREATED)).toEqual([{ orderId: order.id }]);
      expect((await http().get('/deliveries').expect(200)).body).toEqual([]);

      // One drain runs the delivery, then the email job the delivery enqueued.
      const drained = await kit.drain({ only: [ORDER_CREATED, CONFIRMATION_EMAILS] });
      expect(drained).toMatchObject({ succeeded: 2, retried: 0, dead: 0 });
      expect(await kit.outboxed(ORDER_CREATED)).toEqual([]);
      expect(await kit.enqueued(CONFIRMATION_EMAILS)).toEqual([]);
      const deliveries = (await http().get('/deliveries').expect(200)).body as { orderId: number }[];
      expect(deliveries.map((d) => d.orderId)).toEqual([order.id]);
      const emails = (await http().get('/emails').expect(200)).body as {
        orderId: number;
        to: string;
        reason: string;
      }[];
      expect(emails).toEqual([expect.objectContaining({ orderId: order.id, to: 'Ada', reason: 'delivered' })]);
    });

    it('POST /orders/:id/confirmation enqueues an email (seen by GET /stats), and a drain sends it', async () => {
      const order = (await http().post('/orders').send({ customer: 'Grace', item: 'mouse' }).expect(201))
        .body as OrderBody;
      expect(order.quantity).toBe(1);
      await kit.drain();
      const before = ((await http().get('/emails').expect(200)).body as unknown[]).length;

      const { jobId } = (await http().post(`/orders/${order.id}/confirmation`).expect(202)).body as { jobId: number };
      expect(jobId).toBeGreaterThan(0);
      expect(await kit.enqueued(CONFIRMATION_EMAILS)).toEqual([{ orderId: order.id, to: 'Grace', reason: 'resend' }]);
      const stats = (await http().get('/stats').expect(200)).body as Record<string, { pending: number; dead: number }>;
      expect(stats.confirmationEmails).toMatchObject({ pending: 1, dead: 0 });
      expect(stats.orderCreatedOutbox).toMatchObject({ pending: 0, dead: 0 });

      expect(await kit.drain({ only: [CONFIRMATION_EMAILS] })).toMatchObject({ succeeded: 1 });
      const emails = (await http().get('/emails').expect(200)).body as { orderId: number; reason: string }[];
      expect(emails).toHaveLength(before + 1);
      expect(emails.at(-1)).toMatchObject({ orderId: order.id, reason: 'resend' });
      expect(
        ((await http().get('/stats').expect(200)).body as Record<string, { pending: number }>).confirmationEmails
          .pending,
      ).toBe(0);

      await http().post('/orders/2147483647/confirmation').expect(404);
    });

    it('the scheduled report fires on its interval; a drain runs it and GET /reports shows the counts', async () => {
      // The runner (kept in manual mode) fires every second; the fire waits on the queue until drained.
      await waitFor(
        'a fired report job',
        async () => (await kit.enqueued(`scheduled:${REPORT_SCHEDULE}`)).length > 0,
        15_000,
      );
      const result = await kit.drain({ only: [`scheduled:${REPORT_SCHEDULE}`] });
      expect(result.succeeded).toBeGreaterThanOrEqual(1);
      const orders = ((await http().get('/orders').expect(200)).body as unknown[]).length;
      const reports = (await http().get('/reports').expect(200)).body as { orders: number; deliveries: number }[];
      expect(reports.length).toBeGreaterThanOrEqual(1);
      expect(reports.at(-1)).toMatchObject({ orders, deliveries: orders });

      // A fire on demand, between boundaries.
      const jobId = await kit.triggerSchedule(REPORT_SCHEDULE);
      await kit.drain({ only: [`scheduled:${REPORT_SCHEDULE}`] });
      const after = (await http().get('/reports').expect(200)).body as { jobId: number }[];
      expect(after.map((r) => r.jobId)).toContain(jobId);
    });

    it('answers 400 (or 404 / 413), never 500, to bad input, and writes nothing', async () => {
      const ordersBefore = ((await http().get('/orders').expect(200)).body as unknown[]).length;
      const bad: unknown[] = [
        { customer: 'Ada', item: 'x', quantity: 2147483648 },
        { customer: 'Ada', item: 'x', quantity: 1001 },
        { customer: 'Ada', item: 'x', quantity: 0 },
        { customer: 'Ada', item: 'x', quantity: -1 },
        { customer: 'Ada', item: 'x', quantity: 1.5 },
        { customer: 'Ada', item: 'x', quantity: '2' },
        { customer: 'Ada', item: 'x', quantity: 1e308 },
        { customer: 'Ada', item: 'x', quantity: null },
        { customer: 'A\u0000da', item: 'x' },
        { customer: 'Ada', item: 'tab\there' },
        { customer: '   ', item: 'x' },
        { customer: '', item: 'x' },
        { customer: 'a'.repeat(201), item: 'x' },
        { customer: 5, item: 'x' },
        { customer: null, item: 'x' },
        { customer: ['Ada'], item: 'x' },
        { customer: { name: 'Ada' }, item: 'x' },
        { item: 'x' },
        { customer: 'Ada' },
        { customer: 'Ada', item: 'x', admin: true },
        {},
        [],
        [{ customer: 'Ada', item: 'x' }],
      ];
      for (const body of bad) {
        const res = await http()
          .post('/orders')
          .send(body as object);
        expect({ body, status: res.status }).toEqual({ body, status: 400 });
      }
      for (const raw of ['"just a string"', '42', 'null', '{"customer": "Ada", "item": ', 'not json']) {
        const res = await http().post('/orders').set('content-type', 'application/json').send(raw);
        expect({ raw, status: res.status }).toEqual({ raw, status: 400 });
      }
      // Nested 45,000 levels deep (about 90 KB, under the 100 KB body limit): JSON.parse takes it, but
      // validating or encoding it recursively would overflow the stack. A 400, never a 500.
      const deep = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;
      for (const raw of [
        deep(45_000),
        `{"customer": ${deep(45_000)}, "item": "x"}`,
        `{"customer": "Ada", "item": "x", "extra": ${deep(45_000)}}`,
        `{"customer": "Ada", "item": "x", "quantity": ${'{"a":'.repeat(15_000)}1${'}'.repeat(15_000)}}`,
      ]) {
        const res = await http().post('/orders').set('content-type', 'application/json').send(raw);
        expect({ raw: raw.slice(0, 40), status: res.status }).toEqual({ raw: raw.slice(0, 40), status: 400 });
      }
      // Over the body limit: refused before parsing.
      const huge = await http()
        .post('/orders')
        .send({ customer: 'x'.repeat(2_000_000), item: 'x' });
      expect(huge.status).toBe(413);
      for (const id of ['abc', '0', '-1', '1.5', '2147483648', '99999999999999999999', '1e3', '%00']) {
        const res = await http().get(`/orders/${id}`);
        expect({ id, status: res.status, text: res.status === 400 ? '' : res.text }).toEqual({
          id,
          status: 400,
          text: '',
        });
        const resend = await http().post(`/orders/${id}/confirmation`);
        expect({ id, status: resend.status }).toEqual({ id, status: 400 });
      }
      await http().get('/orders/2147483647').expect(404);

      expect(((await http().get('/orders').expect(200)).body as unknown[]).length).toBe(ordersBefore);
      expect(await kit.outboxed(ORDER_CREATED)).toEqual([]);
      expect(await kit.enqueued(CONFIRMATION_EMAILS)).toEqual([]);
    });
  });
}
