import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import type { SampleConfig } from '../../sample/config.js';
import { createTestDatabase, type AlkstoreTestDatabase } from '../../lib/nest/testing/index.js';
import { PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';

const { AppModule } = await import('../../sample/app.module.js');

const ORDERS = 2_000;
const CONCURRENCY = 50;

const engines = PG_AVAILABLE ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

/**
 * The sample under load, with its real workers: 2,000 `POST /orders` at
 * concurrency 50. Each request writes the order and its outbox message in one
 * TypeORM transaction; the `@OutboxHandler` opens a transaction of its own for
 * the delivery row and the email job. Nothing answers 500, and every order is
 * delivered once.
 */
for (const engine of engines) {
  describe(`sample under load (${engine})`, () => {
    let db: AlkstoreTestDatabase;
    let app: INestApplication;
    let base: string;

    beforeAll(async () => {
      db = await createTestDatabase(engine === 'postgres' ? { postgresUrl: PG_URL } : {});
      const config: SampleConfig =
        db.engine === 'sqlite'
          ? { sqlitePath: db.path!, idlePollIntervalMs: 200 }
          : {
              sqlitePath: '/nonexistent',
              databaseUrl: db.url,
              databaseSchema: await db.appSchema(),
              alkstoreSchema: db.schema,
              idlePollIntervalMs: 200,
            };
      const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config)] }).compile();
      app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
      await app.listen(0, '127.0.0.1');
      // Above the client's idle time under load, as in production behind a proxy: a socket the server
      // closed while idle would reset a request that reused it (a transport race, not the app's answer).
      (app.getHttpServer() as { keepAliveTimeout: number }).keepAliveTimeout = 65_000;
      base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await db?.drop();
    }, 60_000);

    it(`answers ${ORDERS} POST /orders at concurrency ${CONCURRENCY} with no 500, and delivers every order once`, async () => {
      const statuses = new Map<number, number>();
      const created: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < ORDERS) {
            const i = next++;
            const res = await fetch(`${base}/orders`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ customer: `c${i}`, item: 'load', quantity: 1 }),
            });
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status === 201) created.push(((await res.json()) as { id: number }).id);
            else await res.arrayBuffer();
          }
        }),
      );
      expect(Object.fromEntries(statuses)).toEqual({ 201: ORDERS });
      const deliveredIds = async (): Promise<number[]> =>
        ((await (await fetch(`${base}/deliveries`)).json()) as { orderId: number }[]).map((d) => d.orderId);
      await waitFor('every order delivered', async () => (await deliveredIds()).length >= ORDERS, 90_000, 100);
      const delivered = await deliveredIds();
      expect(delivered).toHaveLength(ORDERS);
      expect(new Set(delivered)).toEqual(new Set(created));
      const stats = (await (await fetch(`${base}/stats`)).json()) as Record<string, { dead: number }>;
      for (const s of Object.values(stats)) expect(s.dead).toBe(0);
    }, 180_000);
  });
}
