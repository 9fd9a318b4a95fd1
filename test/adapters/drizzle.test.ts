import { expect, it } from '@jest/globals';
import Database from 'better-sqlite3';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3';
import pg from 'pg';
import { InvalidOption } from '../../lib/contract/errors.js';
import { openDrizzle } from '../../lib/adapters/drizzle.js';
import { PG_URL } from '../helpers/engines.js';
import { describeAdapter } from './adapter-cases.js';

describeAdapter({
  name: 'drizzle',
  engines: ['postgres', 'sqlite'],
  async open(engine, db, table, callers) {
    if (engine.kind === 'sqlite') {
      const conn = new Database(db.location);
      const d = drizzleSqlite(conn);
      d.run(sql.raw(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`));
      return {
        transaction: (store, fn) =>
          store.joinTransaction(openDrizzle(d), (tx, h) =>
            fn(tx, async (id, caller) => void h.run(sql`INSERT INTO orders (id, caller) VALUES (${id}, ${caller})`)),
          ),
        ids: async () => d.all<{ id: number }>(sql.raw(`SELECT id FROM ${table} ORDER BY id`)).map((r) => r.id),
        close: async () => void conn.close(),
      };
    }
    const pool = new pg.Pool({ connectionString: PG_URL, max: callers });
    const d = drizzlePg(pool);
    await d.execute(sql.raw(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`));
    return {
      transaction: (store, fn) =>
        store.joinTransaction(openDrizzle(d), (tx, h) =>
          fn(
            tx,
            async (id, caller) =>
              void (await h.execute(sql`INSERT INTO ${sql.raw(table)} (id, caller) VALUES (${id}, ${caller})`)),
          ),
        ),
      ids: async () =>
        (await d.execute<{ id: number }>(sql.raw(`SELECT id FROM ${table} ORDER BY id`))).rows.map((r) => r.id),
      close: () => pool.end(),
    };
  },
  sqliteOpenOn(path) {
    const conn = new Database(path);
    return { open: openDrizzle(drizzleSqlite(conn)), close: async () => void conn.close() };
  },
  extra(ctx, engine) {
    it('bad input: not a Drizzle database, a Drizzle transaction, a database of the other engine: typed errors naming the input, before any write', async () => {
      const { store } = ctx();
      const fn = async (): Promise<void> => undefined;
      expect(() => openDrizzle({} as never)).toThrow(/openDrizzle\(db\) must be a Drizzle database/);
      if (engine.kind === 'postgres') {
        const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
        const d = drizzlePg(pool);
        try {
          await d.transaction(async (dtx) => {
            expect(() => openDrizzle(dtx as never)).toThrow(/is a Drizzle transaction.*pass the database/);
          });
          const conn = new Database(':memory:');
          await expect(store.joinTransaction(openDrizzle(drizzleSqlite(conn)), fn)).rejects.toThrow(InvalidOption);
          await expect(store.joinTransaction(openDrizzle(drizzleSqlite(conn)), fn)).rejects.toThrow(
            /SQLite handle but the store is on PostgreSQL/,
          );
          conn.close();
        } finally {
          await pool.end();
        }
      } else {
        const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
        await expect(store.joinTransaction(openDrizzle(drizzlePg(pool)), fn)).rejects.toThrow(
          /PostgreSQL handle but the store is on SQLite/,
        );
        await pool.end();
      }
    });
  },
});
