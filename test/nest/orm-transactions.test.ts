import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import knexFactory, { type Knex } from 'knex';
import { InvalidOption } from '../../lib/contract/errors.js';
import { AlkstoreModule, knexAdapter, OrmTransactions, Store } from '../../lib/nest/index.js';
import { PG_URL } from '../helpers/engines.js';
import { nestEngines, type NestDb } from './nest-fixtures.js';

const KNEX = Symbol('KNEX');

for (const engine of nestEngines()) {
  describe(`OrmTransactions with forRoot({ orm: knexAdapter(KNEX) }) (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;
    let k: Knex;
    let table: string;

    beforeAll(async () => {
      db = await engine.create();
      const options = db.moduleOptions({ workers: false, orm: knexAdapter(KNEX) });
      if (options.url!.startsWith('sqlite:')) {
        k = knexFactory({
          client: 'better-sqlite3',
          connection: { filename: options.url!.slice('sqlite:'.length) },
          useNullAsDefault: true,
        });
        table = 'orm_orders';
      } else {
        k = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 2 } });
        table = `${options.schema!}_orm_orders`;
      }
      await k.raw(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY)`);
      app = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(options)],
        providers: [{ provide: KNEX, useValue: k }],
      }).compile();
      await app.init();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await k?.raw(`DROP TABLE IF EXISTS ${table}`);
      await k?.destroy();
      await db.destroy();
    });

    it('run(fn) opens a knex transaction of the provided client: the row and the outbox message commit together, or neither on a throw', async () => {
      const orm = app.get<OrmTransactions<ReturnType<typeof knexAdapter>>>(OrmTransactions);
      await orm.run(async (tx, trx) => {
        await trx(table).insert({ id: 1 });
        await tx.outboxEnqueue('orm-out', { id: 1 });
      });
      await expect(
        orm.run(async (tx, trx) => {
          await trx(table).insert({ id: 2 });
          await tx.outboxEnqueue('orm-out', { id: 2 });
          throw new Error('no');
        }),
      ).rejects.toThrow('no');
      expect(((await k(table).select('id')) as { id: number }[]).map((r) => r.id)).toEqual([1]);
      const jobs = await app.get(Store).outbox('orm-out').queue.claimBatch(10, 'w');
      expect(jobs.map((j) => j.payload)).toEqual([{ id: 1 }]);
    });

    it('without an orm option, or with one that is not an adapter, it is refused naming the option and the fix', async () => {
      const bare = await Test.createTestingModule({
        imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: false }))],
      }).compile();
      await bare.init();
      await expect(bare.get(OrmTransactions).run(async () => undefined)).rejects.toThrow(
        /option orm is not set.*prismaAdapter\(PrismaService\)/,
      );
      await bare.close();
      await expect(
        Test.createTestingModule({
          imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: false, orm: {} as never }))],
        })
          .compile()
          .then((m) => m.init()),
      ).rejects.toThrow(InvalidOption);
    });
  });
}
