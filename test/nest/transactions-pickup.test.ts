import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type DynamicModule } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Job } from '../../lib/contract/types.js';
import { AlkstoreModule, AlkstoreWorkflowsModule, OutboxHandler, Workflow } from '../../lib/nest/index.js';
import { InvalidOption } from '../../lib/contract/errors.js';
import { ModuleOrm } from '../../lib/nest/orm/module-orm.js';
import { PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';
import { nestEngines, Widget, type NestDb } from './nest-fixtures.js';
import { PermanentError, Store } from '../../lib/index.js';
import { Workflows, type WorkflowContext } from '../../lib/workflows/index.js';

const delivered: unknown[] = [];

@Injectable()
class WidgetEvents {
  @OutboxHandler('widget-created')
  async deliver(job: Job): Promise<void> {
    delivered.push(job.payload);
  }
}

/** A transactional step on the module's ORM: the widget row and its outbox message, rolled back when `fail`. */
@Workflow('widget-pickup')
@Injectable()
class WidgetWorkflow {
  async run(input: { name: string; fail?: boolean }, ctx: WorkflowContext<EntityManager>): Promise<number> {
    return ctx.transaction('save', async (tx, em) => {
      const w = await em.save(em.create(Widget, { name: input.name }));
      await tx.outboxEnqueue(input.fail ? 'widget-ghosts' : 'widget-created', { id: w.id });
      if (input.fail) throw new PermanentError('rolled back');
      return w.id;
    });
  }
}

/** The workflows module with the module's ORM as the transaction of transactional steps, one attempt each. */
const workflowsOnOrm = (namespace: string): DynamicModule =>
  AlkstoreWorkflowsModule.forRoot({
    namespace,
    idlePollIntervalMs: 50,
    backoffBaseMs: 10,
    maxAttempts: 1,
    transaction: 'orm',
  });

/** TypeOrmModule options on the same database as the fixture's store (its own schema on PostgreSQL). */
async function typeOrmOptionsFor(db: NestDb): Promise<Parameters<typeof TypeOrmModule.forRoot>[0]> {
  const ds = await db.dataSource(); // creates the app schema / table
  const options = { ...ds.options, entities: [Widget], synchronize: true } as Parameters<
    typeof TypeOrmModule.forRoot
  >[0];
  await ds.destroy();
  return options;
}

/** Runs one `widget-pickup` and resolves to its result, or rejects with why the run failed. */
async function pickUp(app: TestingModule, name: string, fail = false): Promise<number> {
  const workflows = app.get(Workflows);
  const { id } = await workflows.start('widget-pickup', { name, fail });
  return workflows.waitForResult<number>(id, { timeoutMs: 20_000 });
}

for (const engine of nestEngines()) {
  describe(`transaction: 'orm' with forRoot({ url }) and TypeOrmModule: the application's DataSource (${engine.name})`, () => {
    let db: NestDb;
    let app: TestingModule;

    beforeAll(async () => {
      db = await engine.create();
      app = await Test.createTestingModule({
        imports: [
          TypeOrmModule.forRoot(await typeOrmOptionsFor(db)),
          AlkstoreModule.forRoot(db.moduleOptions()),
          workflowsOnOrm('pickup'),
        ],
        providers: [WidgetEvents, WidgetWorkflow],
      }).compile();
      await app.init();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await db.destroy();
    });

    it("a step runs on the application's DataSource: the row and the outbox message commit together and the message is delivered", async () => {
      const widget = await pickUp(app, 'picked-up');
      expect(await app.get(DataSource).getRepository(Widget).countBy({ name: 'picked-up' })).toBe(1);
      await waitFor('the delivery', () => delivered.some((p) => (p as { id: number }).id === widget));
    });

    it('a rollback drops both', async () => {
      await expect(pickUp(app, 'ghost', true)).rejects.toThrow('rolled back');
      expect(await app.get(DataSource).getRepository(Widget).countBy({ name: 'ghost' })).toBe(0);
      expect(await app.get(Store).outbox('widget-ghosts').queue.stats()).toMatchObject({ pending: 0, processing: 0 });
    });
  });
}

/** What the module's ORM does when a transaction joins it (the `'orm'` of the decorators and the workflows module). */
async function joinModuleOrm(app: TestingModule): Promise<unknown> {
  return app
    .get(Store)
    .joinTransaction(app.get(ModuleOrm).open, async (_tx, em) => {
      await (em as EntityManager).save((em as EntityManager).create(Widget, { name: 'elsewhere' }));
      return 'joined';
    })
    .catch((e: unknown) => e);
}

describe("the module's ORM refuses what cannot be one transaction, and writes nothing", () => {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-pickup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('without an orm option or any TypeORM DataSource: InvalidOption naming orm and the ways to set it', async () => {
    const app = await Test.createTestingModule({
      imports: [AlkstoreModule.forRoot({ url: `sqlite:${join(dir, 'a.db')}` })],
    }).compile();
    await app.init();
    try {
      const err = await joinModuleOrm(app);
      expect(err).toBeInstanceOf(InvalidOption);
      expect((err as InvalidOption).field).toBe('orm');
      expect((err as Error).message).toMatch(/openPrisma\(prisma\).*TypeOrmModule.*transaction: 'store'/);
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
      const err = await joinModuleOrm(app);
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
      const schema = `pickup_${process.pid}`;
      const app = await Test.createTestingModule({
        imports: [
          TypeOrmModule.forRoot({ type: 'postgres', url: other.toString(), entities: [], poolSize: 2 }),
          AlkstoreModule.forRoot({ url: PG_URL, schema, poolSize: 2, workers: 'off' }),
        ],
      }).compile();
      await app.init();
      try {
        expect(await joinModuleOrm(app)).toBeInstanceOf(InvalidOption);
      } finally {
        await app.close();
        const pg = (await import('pg')).default;
        const c = new pg.Client({ connectionString: PG_URL });
        await c.connect();
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await c.end();
      }
    },
  );
});
