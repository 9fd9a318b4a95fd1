import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import knexFactory, { type Knex } from 'knex';
import { openKnex } from '../../lib/adapters/knex.js';
import { InvalidOption } from '../../lib/contract/errors.js';
import { AlkstoreModule, AlkstoreWorkflowsModule, Workflow } from '../../lib/nest/index.js';
import { PG_URL } from '../helpers/engines.js';
import { nestEngines, type NestDb } from './nest-fixtures.js';
import { PermanentError, Store } from '../../lib/index.js';
import { Workflows, type WorkflowContext } from '../../lib/workflows/index.js';

const KNEX = Symbol('KNEX');
let table = '';

/** The application's module that provides its knex client (as a PrismaModule provides PrismaService). */
@Module({})
class KnexModule {
  static of(client: Knex): DynamicModule {
    return { module: KnexModule, providers: [{ provide: KNEX, useValue: client }], exports: [KNEX] };
  }
}

/** A transactional step on the module's `orm`: a row through knex's trx and an outbox message, rolled back when `fail`. */
@Workflow('knex-order')
@Injectable()
class KnexOrderWorkflow {
  async run(input: { id: number; fail?: boolean }, ctx: WorkflowContext<Knex.Transaction>): Promise<number> {
    return ctx.transaction('insert', async (tx, trx) => {
      await trx(table).insert({ id: input.id });
      await tx.outboxEnqueue('orm-out', { id: input.id });
      if (input.fail) throw new PermanentError('no');
      return input.id;
    });
  }
}

for (const engine of nestEngines()) {
  describe(`AlkstoreModule's orm option (openKnex) as the transaction of transaction: 'orm' (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;
    let k: Knex;

    beforeAll(async () => {
      db = await engine.create();
      const options = db.moduleOptions();
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
        imports: [
          AlkstoreModule.forRootAsync({
            imports: [KnexModule.of(k)],
            inject: [KNEX],
            useFactory: (client: Knex) => ({ ...options, orm: openKnex(client) }),
          }),
          AlkstoreWorkflowsModule.forRoot({
            namespace: 'orm-knex',
            idlePollIntervalMs: 50,
            maxAttempts: 1,
            transaction: 'orm',
          }),
        ],
        providers: [KnexOrderWorkflow],
      }).compile();
      await app.init();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await k?.raw(`DROP TABLE IF EXISTS ${table}`);
      await k?.destroy();
      await db.destroy();
    });

    it('a step opens a knex transaction of the provided client: the row and the outbox message commit together, or neither on a throw', async () => {
      const workflows = app.get(Workflows);
      const ok = await workflows.start('knex-order', { id: 1 });
      await expect(workflows.waitForResult(ok.id, { timeoutMs: 20_000 })).resolves.toBe(1);
      const failed = await workflows.start('knex-order', { id: 2, fail: true });
      await expect(workflows.waitForResult(failed.id, { timeoutMs: 20_000 })).rejects.toThrow('no');
      expect(((await k(table).select('id')) as { id: number }[]).map((r) => r.id)).toEqual([1]);
      const jobs = await app.get(Store).outbox('orm-out').queue.claimBatch(10, 'w');
      expect(jobs.map((j) => j.payload)).toEqual([{ id: 1 }]);
    });

    it('an orm option that is not an open function is refused at startup, naming the option and the fix', async () => {
      await expect(
        Test.createTestingModule({
          imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off', orm: {} as never }))],
        })
          .compile()
          .then((m) => m.init()),
      ).rejects.toThrow(InvalidOption);
      await expect(
        Test.createTestingModule({
          imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off', orm: {} as never }))],
        })
          .compile()
          .then((m) => m.init()),
      ).rejects.toThrow(/option orm must be the open of your ORM.*openPrisma\(prisma\)/);
    });
  });
}
