import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, AlkstoreTransactions, OutboxHandler, Store } from '../../lib/nest/index.js';
import { PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';
import { nestEngines, Widget, type NestDb } from './nest-fixtures.js';

const delivered: unknown[] = [];

@Injectable()
class WidgetEvents {
  @OutboxHandler('widget-created')
  async deliver(job: Job): Promise<void> {
    delivered.push(job.payload);
  }
}

/** TypeOrmModule options on the same database as the fixture's store (its own schema on PostgreSQL). */
async function typeOrmOptionsFor(db: NestDb): Promise<Parameters<typeof TypeOrmModule.forRoot>[0]> {
  const ds = await db.dataSource(); // creates the app schema / table
  const options = { ...ds.options, entities: [Widget], synchronize: true } as Parameters<
    typeof TypeOrmModule.forRoot
  >[0];
  await ds.destroy();
  return options;
}

for (const engine of nestEngines()) {
  describe(`AlkstoreTransactions with forRoot({ url }) and TypeOrmModule (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;

    beforeAll(async () => {
      db = await engine.create();
      app = await Test.createTestingModule({
        imports: [TypeOrmModule.forRoot(await typeOrmOptionsFor(db)), AlkstoreModule.forRoot(db.moduleOptions())],
        providers: [WidgetEvents],
      }).compile();
      await app.init();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await db.destroy();
    });

    it("runs on the application's DataSource: the row and the outbox message commit together and the message is delivered", async () => {
      const widget = await app.get(AlkstoreTransactions).run(async (tx, em) => {
        const w = await em.save(em.create(Widget, { name: 'picked-up' }));
        await tx.outboxEnqueue('widget-created', { id: w.id });
        return w;
      });
      expect(await app.get(DataSource).getRepository(Widget).countBy({ name: 'picked-up' })).toBe(1);
      await waitFor('the delivery', () => delivered.some((p) => (p as { id: number }).id === widget.id));
    });

    it('a rollback drops both', async () => {
      const attempt = app.get(AlkstoreTransactions).run(async (tx, em) => {
        await em.save(em.create(Widget, { name: 'ghost' }));
        await tx.outboxEnqueue('widget-ghosts', { name: 'ghost' });
        throw new Error('rolled back');
      });
      await expect(attempt).rejects.toThrow('rolled back');
      expect(await app.get(DataSource).getRepository(Widget).countBy({ name: 'ghost' })).toBe(0);
      expect(await app.get(Store).outbox('widget-ghosts').queue.stats()).toMatchObject({ pending: 0 });
    });
  });
}

describe('AlkstoreTransactions refuses what cannot be one transaction', () => {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-pickup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('without any TypeORM DataSource: InvalidOption naming dataSource and the store-only alternative', async () => {
    const app = await Test.createTestingModule({
      imports: [AlkstoreModule.forRoot({ url: `sqlite:${join(dir, 'a.db')}` })],
    }).compile();
    await app.init();
    try {
      const err = await app
        .get(AlkstoreTransactions)
        .run(async () => 1)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidOption);
      expect((err as InvalidOption).field).toBe('dataSource');
      expect((err as Error).message).toContain('store.withTx');
    } finally {
      await app.close();
    }
  });

  it('when the TypeORM DataSource is on another SQLite file: InvalidOption, and nothing is written', async () => {
    const app = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({
          type: 'better-sqlite3',
          database: join(dir, 'business.db'),
          entities: [Widget],
          synchronize: true,
        }),
        AlkstoreModule.forRoot({ url: `sqlite:${join(dir, 'store.db')}` }),
      ],
    }).compile();
    await app.init();
    try {
      const err = await app
        .get(AlkstoreTransactions)
        .run(async (_tx, em) => em.save(em.create(Widget, { name: 'elsewhere' })))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidOption);
      expect((err as Error).message).toContain('not on the database');
      expect(await app.get(DataSource).getRepository(Widget).count()).toBe(0);
    } finally {
      await app.close();
    }
  });

  (PG_AVAILABLE ? it : it.skip)(
    'when the TypeORM DataSource is on another PostgreSQL database: InvalidOption (engine-only)',
    async () => {
      const other = new URL(PG_URL);
      other.pathname = '/postgres';
      const app = await Test.createTestingModule({
        imports: [
          TypeOrmModule.forRoot({ type: 'postgres', url: other.toString(), entities: [], poolSize: 2 }),
          AlkstoreModule.forRoot({ url: PG_URL, schema: `pickup_${process.pid}`, poolSize: 2, workers: false }),
        ],
      }).compile();
      await app.init();
      try {
        const err = await app
          .get(AlkstoreTransactions)
          .run(async () => 1)
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(InvalidOption);
      } finally {
        await app.close();
        const pg = (await import('pg')).default;
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "pickup_${process.pid}" CASCADE`);
        await c.end();
      }
    },
  );
});
