import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../../sample/app.module.js';
import type { SampleConfig } from '../../sample/config.js';
import { PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';

interface Target {
  name: string;
  config(): SampleConfig;
  cleanup(): Promise<void>;
}

function sqliteTarget(): Target {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-sample-'));
  return {
    name: 'sqlite',
    // A nested path: the app creates the data directory itself.
    config: () => ({ sqlitePath: join(dir, 'data', 'app.db') }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

function postgresTarget(): Target {
  const schema = `sample_${process.pid}_${Date.now().toString(36)}`;
  return {
    name: 'postgres',
    config: () => ({ sqlitePath: '/nonexistent', databaseUrl: PG_URL, databaseSchema: `${schema}_app`, alkstoreSchema: schema }),
    async cleanup() {
      const pg = (await import('pg')).default;
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_app" CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}

const targets = PG_AVAILABLE ? [sqliteTarget, postgresTarget] : [sqliteTarget];

for (const makeTarget of targets) {
  const target = makeTarget();
  describe(`sample orders app over HTTP (${target.name})`, () => {
    let app: INestApplication;

    beforeAll(async () => {
      const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(target.config())] }).compile();
      app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
      await app.init();
    });
    afterAll(async () => {
      await app?.close();
      await target.cleanup();
    });

    it('POST /orders saves the order, and its outbox message shows up in GET /deliveries', async () => {
      const created = await request(app.getHttpServer()).post('/orders').send({ customer: 'Ada', item: 'keyboard', quantity: 2 }).expect(201);
      const order = created.body as { id: number; customer: string };
      expect(order).toMatchObject({ customer: 'Ada', item: 'keyboard', quantity: 2 });

      const orders = await request(app.getHttpServer()).get('/orders').expect(200);
      expect((orders.body as { id: number }[]).map((o) => o.id)).toContain(order.id);

      const delivery = await waitFor(
        'the delivery of the order',
        async () => {
          const res = await request(app.getHttpServer()).get('/deliveries').expect(200);
          return (res.body as { orderId: number; jobId: number }[]).find((d) => d.orderId === order.id);
        },
        15_000,
        50,
      );
      expect(delivery.jobId).toBeGreaterThan(0);
    });

    it('rejects an invalid order with 400 and writes nothing', async () => {
      const before = (await request(app.getHttpServer()).get('/orders').expect(200)).body as unknown[];
      await request(app.getHttpServer()).post('/orders').send({ customer: '', item: 'x' }).expect(400);
      const after = (await request(app.getHttpServer()).get('/orders').expect(200)).body as unknown[];
      expect(after.length).toBe(before.length);
    });
  });
}
