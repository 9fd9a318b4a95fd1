import { expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { openKysely } from '../../lib/adapters/kysely.js';
import { PG_URL } from '../helpers/engines.js';
import { describeAdapter } from './adapter-cases.js';

interface Orders {
  orders: { id: number; caller: number };
}

describeAdapter({
  name: 'kysely',
  engines: ['postgres', 'sqlite'],
  async open(engine, db, table, callers) {
    const k =
      engine.kind === 'sqlite'
        ? new Kysely<Orders>({ dialect: new SqliteDialect({ database: new Database(db.location) }) })
        : new Kysely<Orders>({
            dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: callers }) }),
          }).withSchema(db.location);
    await sql.raw(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`).execute(k);
    return {
      transaction: (store, fn) =>
        store.joinTransaction(openKysely(k), (tx, trx) =>
          fn(tx, async (id, caller) => void (await trx.insertInto('orders').values({ id, caller }).execute())),
        ),
      ids: async () => (await k.selectFrom('orders').select('id').orderBy('id').execute()).map((r) => r.id),
      close: () => k.destroy(),
    };
  },
  sqliteOpenOn(path) {
    const k = new Kysely<Orders>({ dialect: new SqliteDialect({ database: new Database(path) }) });
    return { open: openKysely(k), close: () => k.destroy() };
  },
  extra(ctx, engine) {
    it('bad input: not a Kysely instance, a Kysely transaction, a dialect of the other engine: typed errors naming the input, before any write', async () => {
      const { store } = ctx();
      const fn = async (): Promise<void> => undefined;
      expect(() => openKysely({} as never)).toThrow(/openKysely\(db\) must be a Kysely instance/);
      const other =
        engine.kind === 'sqlite'
          ? new Kysely<Orders>({
              dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: 1 }) }),
            })
          : new Kysely<Orders>({ dialect: new SqliteDialect({ database: new Database(':memory:') }) });
      await expect(store.joinTransaction(openKysely(other), fn)).rejects.toThrow(
        engine.kind === 'sqlite'
          ? /PostgreSQL handle but the store is on SQLite/
          : /SQLite handle but the store is on PostgreSQL/,
      );
      await other.destroy();
      const same =
        engine.kind === 'sqlite'
          ? new Kysely<Orders>({ dialect: new SqliteDialect({ database: new Database(ctx().db.location) }) })
          : new Kysely<Orders>({
              dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: 1 }) }),
            });
      await same.transaction().execute(async (trx) => {
        expect(() => openKysely(trx as never)).toThrow(/is a Kysely transaction.*pass the Kysely instance/);
      });
      await same.destroy();
    });
  },
});
