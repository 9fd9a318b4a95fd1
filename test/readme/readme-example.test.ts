// The README's headline Nest example and its main.ts, run as printed on both
// engines: only the imports are pointed at the sources, the SQLite file at a
// temp dir, and DATABASE_URL (PostgreSQL) at a database of its own.
import 'reflect-metadata';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplicationContext, Type } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { PG_AVAILABLE, PG_URL, waitFor } from '../helpers/engines.js';
import { entryPointSources, snippets } from './extract.js';
import { Store } from '../../lib/index.js';

interface OrderRow {
  id: number;
  customer: string;
  status: string;
}
interface Example {
  AppModule: Type;
  OrdersService: Type<{ create(customer: string): Promise<OrderRow> }>;
  Order: Type;
}

const outDir = join(process.cwd(), '.tmp', `readme-${process.pid}`);
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

/** The README's module block and the `main.ts` block after it, for `dir`: imports pointed at the sources, the SQLite file at `dbFile`. */
function exampleSources(dir: string, dbFile: string): { module: string; main: string } {
  const all = snippets();
  const at = all.findIndex((s) => s.file === 'README.md' && s.code.includes('AlkstoreModule.forRootAsync'));
  if (at === -1) throw new Error('README.md has no Nest example with AlkstoreModule.forRootAsync');
  const main = all[at + 1];
  if (!main || main.flags[0] !== 'main')
    throw new Error('README.md: the Nest example is not followed by its main.ts block');
  let module = all[at]!.code;
  for (const [specifier, source] of entryPointSources()) {
    const rel = relative(dir, join(process.cwd(), source)).replace(/\.ts$/, '.js');
    module = module.split(`from '${specifier}'`).join(`from '${rel.startsWith('.') ? rel : `./${rel}`}'`);
  }
  expect(module).toContain("database: './data/app.db'");
  return {
    module: module.replace("database: './data/app.db'", `database: ${JSON.stringify(dbFile)}`),
    main: `${main.code}export { app, order };\n`,
  };
}

async function createDatabase(name: string): Promise<void> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name}`);
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
}

async function dropDatabase(name: string): Promise<void> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

const engines: {
  name: string;
  databaseUrl: () => string | undefined;
  setup(): Promise<void>;
  teardown(): Promise<void>;
}[] = [];
const dbName = `readme_${process.pid}_${Date.now().toString(36)}`;
engines.push({
  name: 'sqlite',
  databaseUrl: () => undefined,
  setup: async () => undefined,
  teardown: async () => undefined,
});
if (PG_AVAILABLE) {
  engines.push({
    name: 'postgres',
    databaseUrl: () => {
      const u = new URL(PG_URL);
      u.pathname = `/${dbName}`;
      return u.toString();
    },
    setup: () => createDatabase(dbName),
    teardown: () => dropDatabase(dbName),
  });
}

for (const engine of engines) {
  describe(`the README Nest example, app.module.ts and main.ts as printed [${engine.name}]`, () => {
    let app: INestApplicationContext;
    let example: Example;
    let first: OrderRow;
    const dir = mkdtempSync(join(tmpdir(), 'alkstore-readme-'));

    beforeAll(async () => {
      await engine.setup();
      const here = join(outDir, engine.name);
      mkdirSync(here, { recursive: true });
      const src = exampleSources(here, join(dir, 'app.db'));
      writeFileSync(join(here, 'app.module.ts'), src.module);
      writeFileSync(join(here, 'main.ts'), src.main);
      const url = engine.databaseUrl();
      if (url === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = url;
      try {
        // main.ts boots the application and places the first order, as `node main.js` would.
        const main = (await import(join(here, 'main.ts'))) as { app: INestApplicationContext; order: OrderRow };
        app = main.app;
        first = main.order;
        example = (await import(join(here, 'app.module.ts'))) as Example;
      } finally {
        delete process.env.DATABASE_URL;
      }
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      rmSync(dir, { recursive: true, force: true });
      await engine.teardown();
    }, 60_000);

    it('main.ts places an order that the handlers confirm', async () => {
      expect(first).toMatchObject({ customer: 'Ada', status: 'new' });
      const orders = app.get<DataSource>((await import('typeorm')).DataSource).getRepository<OrderRow>(example.Order);
      expect(app.get<DataSource>((await import('typeorm')).DataSource).options.type).toBe(
        engine.name === 'sqlite' ? 'better-sqlite3' : 'postgres',
      );
      await waitFor(
        'the first order to be confirmed',
        async () => (await orders.findOneBy({ id: first.id }))?.status === 'confirmed',
      );
    });

    it('create() saves the order; the outbox handler feeds the emails queue; its handler confirms the order', async () => {
      const order = await app.get(example.OrdersService).create('Ada');
      expect(order).toMatchObject({ customer: 'Ada', status: 'new' });
      const orders = app.get<DataSource>((await import('typeorm')).DataSource).getRepository<OrderRow>(example.Order);
      await waitFor(
        'the order to be confirmed',
        async () => (await orders.findOneBy({ id: order.id }))?.status === 'confirmed',
      );
      const store = app.get(Store);
      await waitFor('the emails job to be acked', async () => {
        const stats = await store.queue('emails').stats();
        return stats.pending === 0 && stats.processing === 0;
      });
      expect(await store.queue('emails').stats()).toMatchObject({ dead: 0 });
      expect(await store.outbox('order-created').queue.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    });

    it('the order row and its outbox message commit together, or neither does', async () => {
      const { openTypeOrm } = await import('../../lib/adapters/index.js');
      const dataSource = app.get<DataSource>((await import('typeorm')).DataSource);
      const orders = dataSource.getRepository<OrderRow>(example.Order);
      const before = await orders.count();
      const attempt = app.get(Store).joinTransaction(openTypeOrm(dataSource), async (tx, em) => {
        await em.save(em.create(example.Order, { customer: 'Ghost' }));
        await tx.outboxEnqueue('order-created', { orderId: -1 });
        throw new Error('payment declined');
      });
      await expect(attempt).rejects.toThrow('payment declined');
      expect(await orders.count()).toBe(before);
      expect(await orders.countBy({ customer: 'Ghost' })).toBe(0);
      expect(await app.get(Store).outbox('order-created').queue.stats()).toMatchObject({ pending: 0, processing: 0 });
    });
  });
}
