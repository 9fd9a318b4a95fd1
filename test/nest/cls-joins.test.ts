import { describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { DrizzleSqliteTransactionalAdapter } from '../../lib/nest/cls/drizzle-sqlite-adapter.js';
import { drizzleClsJoin, prismaClsJoin } from '../../lib/nest/cls/orm-joins.js';
import { contractEngines, PG_URL, withEngineDb } from '../helpers/engines.js';

const active = (): boolean => true;

/** Bad input to alkstore/cls's Prisma and Drizzle pieces: typed errors naming the input and the fix, before any write, the same on both engines. */
describe.each(contractEngines().map((e) => [e.name, e] as const))(
  'alkstore/cls joins, bad input [%s]',
  (_n, engine) => {
    let store: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('prismaClsJoin refuses a client that is not a Prisma transaction client, naming it and the Drizzle alternative', () => {
      expect(() => prismaClsJoin({}, active)).toThrow(InvalidOption);
      expect(() => prismaClsJoin(null, active)).toThrow(
        /prismaClsJoin\(client\) must be a Prisma transaction client.*drizzleClsJoin with Drizzle/,
      );
    });

    it('drizzleClsJoin refuses a client that is not Drizzle, and a Drizzle handle of the other engine than the store', async () => {
      await expect(drizzleClsJoin({}, active, store)).rejects.toThrow(
        /drizzleClsJoin\(client\) must be a Drizzle transaction.*prismaClsJoin with Prisma/,
      );
      const conn = new Database(':memory:');
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      try {
        const other = engine.kind === 'sqlite' ? drizzlePg(pool) : drizzleSqlite(conn);
        await expect(drizzleClsJoin(other, active, store)).rejects.toThrow(
          engine.kind === 'sqlite'
            ? /PostgreSQL handle but the store is on SQLite/
            : /SQLite handle but the store is on PostgreSQL/,
        );
      } finally {
        conn.close();
        await pool.end();
      }
    });
  },
);

describe('DrizzleSqliteTransactionalAdapter, bad input', () => {
  it('refuses options without drizzleInstanceToken', () => {
    expect(() => new DrizzleSqliteTransactionalAdapter({} as never)).toThrow(
      /DrizzleSqliteTransactionalAdapter\(options.drizzleInstanceToken\) is required/,
    );
  });

  it('refuses a token that resolves to something other than a Drizzle better-sqlite3 database, naming the PostgreSQL adapter', async () => {
    const adapter = new DrizzleSqliteTransactionalAdapter({ drizzleInstanceToken: 'DB' });
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    try {
      expect(() => adapter.optionsFactory(drizzlePg(pool) as never)).toThrow(
        /must resolve to a Drizzle better-sqlite3 database.*TransactionalAdapterDrizzleOrm/,
      );
    } finally {
      await pool.end();
    }
  });

  it('refuses an unknown behavior before BEGIN: the connection stays outside any transaction', async () => {
    const conn = new Database(':memory:');
    try {
      const options = new DrizzleSqliteTransactionalAdapter({ drizzleInstanceToken: 'DB' }).optionsFactory(
        drizzleSqlite(conn),
      );
      let ran = false;
      await expect(
        options.wrapWithTransaction(
          { behavior: 'eager' as 'immediate' },
          async () => (ran = true),
          () => undefined,
        ),
      ).rejects.toThrow(/behavior must be one of "deferred", "immediate", "exclusive" \(got "eager"\)/);
      expect(ran).toBe(false);
      expect(conn.inTransaction).toBe(false);
    } finally {
      conn.close();
    }
  });
});
