import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import { PrismaPg } from '@prisma/adapter-pg';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openPrisma } from '../../lib/adapters/prisma.js';
import { PG_URL } from '../helpers/engines.js';
import { describeAdapter } from './adapter-cases.js';
import { generatePrismaClient } from './prisma-client.js';

/** The generated client's surface this test uses (the real type is generated at run time). */
interface OrderDelegate {
  create(args: { data: { id: number; caller: number } }): Promise<unknown>;
  findMany(args: { select: { id: true }; orderBy: { id: 'asc' } }): Promise<{ id: number }[]>;
}
interface TestPrismaTx {
  order: OrderDelegate;
  $queryRawUnsafe<R = unknown>(query: string, ...values: unknown[]): Promise<R>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}
interface TestPrisma extends TestPrismaTx {
  $transaction<R>(
    fn: (prismaTx: TestPrismaTx) => Promise<R>,
    options?: { timeout?: number; maxWait?: number },
  ): Promise<R>;
  $disconnect(): Promise<void>;
}
type PrismaCtor = new (options: { adapter: unknown }) => TestPrisma;

const clients: Partial<Record<'sqlite' | 'postgresql', PrismaCtor>> = {};

const OUT = join(process.cwd(), '.tmp', `prisma-${process.pid}`);

beforeAll(async () => {
  for (const provider of ['postgresql', 'sqlite'] as const) {
    const mod = (await import(generatePrismaClient(provider, OUT))) as {
      PrismaClient?: PrismaCtor;
      default?: { PrismaClient: PrismaCtor };
    };
    clients[provider] = mod.PrismaClient ?? mod.default!.PrismaClient;
  }
}, 120_000);
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

describeAdapter({
  name: 'prisma',
  engines: ['postgres', 'sqlite'],
  async open(engine, db, table, callers) {
    let prisma: TestPrisma;
    if (engine.kind === 'sqlite') {
      const conn = new Database(db.location);
      conn.exec(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`);
      conn.close();
      prisma = new clients.sqlite!({ adapter: new PrismaBetterSqlite3({ url: `file:${db.location}` }) });
    } else {
      const pool = new pg.Pool({ connectionString: PG_URL });
      await pool.query(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`);
      await pool.end();
      prisma = new clients.postgresql!({
        adapter: new PrismaPg({ connectionString: PG_URL, max: callers }, { schema: db.location }),
      });
    }
    return {
      transaction: (store, fn) =>
        store.joinTransaction(openPrisma(prisma, { timeout: 30_000, maxWait: 30_000 }), (tx, prismaTx) =>
          fn(tx, async (id, caller) => void (await prismaTx.order.create({ data: { id, caller } }))),
        ),
      ids: async () => (await prisma.order.findMany({ select: { id: true }, orderBy: { id: 'asc' } })).map((r) => r.id),
      close: () => prisma.$disconnect(),
    };
  },
  sqliteOpenOn(path) {
    const prisma = new clients.sqlite!({ adapter: new PrismaBetterSqlite3({ url: `file:${path}` }) });
    return { open: openPrisma(prisma), close: () => prisma.$disconnect() };
  },
  extra(ctx, engine) {
    it('bad input: not a Prisma client, a client of the other provider: typed errors naming the input, before any write', async () => {
      const { store } = ctx();
      const fn = async (): Promise<void> => undefined;
      expect(() => openPrisma({} as never)).toThrow(/openPrisma\(prisma\) must be a Prisma client/);
      const other =
        engine.kind === 'sqlite'
          ? new clients.postgresql!({ adapter: new PrismaPg({ connectionString: PG_URL, max: 1 }) })
          : new clients.sqlite!({ adapter: new PrismaBetterSqlite3({ url: ':memory:' }) });
      await expect(store.joinTransaction(openPrisma(other), fn)).rejects.toThrow(
        engine.kind === 'sqlite'
          ? /PostgreSQL handle but the store is on SQLite/
          : /SQLite handle but the store is on PostgreSQL/,
      );
      await other.$disconnect();
    });
  },
});
