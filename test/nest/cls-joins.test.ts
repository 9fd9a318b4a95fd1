import { describe, expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { AlkstoreTransactionalAdapter } from '../../lib/nest/cls/alkstore-cls-adapter.js';
import { DrizzleSqliteTransactionalAdapter } from '../../lib/nest/cls/drizzle-sqlite-adapter.js';
import { contractEngines, PG_URL, withEngineDb } from '../helpers/engines.js';

/**
 * The wrapper's transaction options over an ORM adapter whose transactions hand `client` to the
 * method (a stand-in for the ORM's own cls adapter: it opens nothing, and the store refuses the
 * client before any statement).
 */
function wrapped(client: unknown, store: Store) {
  const inner = {
    connectionToken: 'ORM',
    optionsFactory: () => ({
      wrapWithTransaction: async (_options: unknown, fn: () => Promise<unknown>, setTx: (c: unknown) => void) => {
        setTx(client);
        return fn();
      },
      getFallbackInstance: () => client,
    }),
  };
  return new AlkstoreTransactionalAdapter({ adapter: inner as never }).optionsFactory('connection' as never, [store]);
}

/** Bad input to alkstore/cls: typed errors naming the input and the fix, before any write, the same on both engines. */
describe.each(contractEngines().map((e) => [e.name, e] as const))(
  'alkstore/cls joins, bad input [%s]',
  (_n, engine) => {
    let store: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    it('AlkstoreTransactionalAdapter refuses a transaction client of no ORM it joins, naming the adapters it wraps, before the method runs', async () => {
      for (const client of [{}, null]) {
        let ran = false;
        const attempt = wrapped(client, store).wrapWithTransaction(
          {} as never,
          async () => void (ran = true),
          () => undefined,
        );
        await expect(attempt).rejects.toThrow(InvalidOption);
        await expect(attempt).rejects.toThrow(
          /AlkstoreTransactionalAdapter\(adapter\) opened a transaction whose client alkstore cannot join.*TransactionalAdapterPrisma/,
        );
        expect(ran).toBe(false);
      }
    });

    it('AlkstoreTransactionalAdapter refuses a Drizzle client of the other engine than the store, before the method runs', async () => {
      const conn = new Database(':memory:');
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      try {
        const other = engine.kind === 'sqlite' ? drizzlePg(pool) : drizzleSqlite(conn);
        let ran = false;
        await expect(
          wrapped(other, store).wrapWithTransaction(
            {} as never,
            async () => void (ran = true),
            () => undefined,
          ),
        ).rejects.toThrow(
          engine.kind === 'sqlite'
            ? /PostgreSQL handle but the store is on SQLite/
            : /SQLite handle but the store is on PostgreSQL/,
        );
        expect(ran).toBe(false);
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
