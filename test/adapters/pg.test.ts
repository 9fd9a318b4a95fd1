import { expect, it } from '@jest/globals';
import pg from 'pg';
import { InvalidOption } from '../../lib/contract/errors.js';
import { openPg } from '../../lib/adapters/pg.js';
import { PG_URL } from '../helpers/engines.js';
import { describeAdapter } from './adapter-cases.js';

describeAdapter({
  name: 'pg',
  engines: ['postgres'],
  async open(_engine, _db, table, callers) {
    const pool = new pg.Pool({ connectionString: PG_URL, max: callers });
    await pool.query(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`);
    return {
      transaction: (store, fn) =>
        store.joinTransaction(openPg(pool), (tx, client) =>
          fn(
            tx,
            async (id, caller) =>
              void (await client.query(`INSERT INTO ${table} (id, caller) VALUES ($1, $2)`, [id, caller])),
          ),
        ),
      ids: async () => (await pool.query<{ id: number }>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => r.id),
      close: () => pool.end(),
    };
  },
  extra(ctx) {
    it('a PoolClient inside BEGIN is joined and the caller commits or rolls back; one not inside BEGIN is refused before any write', async () => {
      const { store, table, fixture } = ctx();
      const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
      const client = await pool.connect();
      try {
        const outside = (): Promise<number> =>
          store.joinTransaction(openPg(client), async (tx) => tx.outboxEnqueue('p-out', { id: 50 }));
        await expect(outside()).rejects.toThrow(InvalidOption);
        await expect(outside()).rejects.toThrow(/not inside a transaction.*BEGIN/);
        await client.query('BEGIN');
        await store.joinTransaction(openPg(client), async (tx, c) => {
          await c.query(`INSERT INTO ${table} (id, caller) VALUES (51, 0)`);
          await tx.outboxEnqueue('p-out', { id: 51 });
        });
        // Not committed yet: the caller owns the transaction.
        expect(await fixture.ids()).not.toContain(51);
        expect((await store.outbox('p-out').queue.stats()).pending).toBe(0);
        await client.query('ROLLBACK');
        expect((await store.outbox('p-out').queue.stats()).pending).toBe(0);
        await client.query('BEGIN');
        await store.joinTransaction(openPg(client), async (tx, c) => {
          await c.query(`INSERT INTO ${table} (id, caller) VALUES (52, 0)`);
          await tx.outboxEnqueue('p-out', { id: 52 });
        });
        await client.query('COMMIT');
        expect(await fixture.ids()).toContain(52);
        const jobs = await store.outbox('p-out').queue.claimBatch(10, 'w');
        expect(jobs.map((j) => j.payload)).toEqual([{ id: 52 }]);
        await store.outbox('p-out').queue.ackBatch(jobs);
      } finally {
        client.release();
        await pool.end();
      }
    });

    it('bad input: not a pg handle, a failed transaction: typed errors naming the input, before any write', async () => {
      const { store } = ctx();
      const fn = async (): Promise<void> => undefined;
      expect(() => openPg({} as pg.Pool)).toThrow(/openPg\(poolOrClient\) must be a pg Pool/);
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      try {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          // pg rejects a failed query on its ErrorResponse, which may arrive before the ReadyForQuery
          // that sets the transaction status to 'E' (about 1 in 15 here): joining right after the
          // failure must still be the typed refusal, every time.
          for (let i = 0; i < 200; i++) {
            await client.query('SELECT 1/0').catch(() => undefined);
            await expect(store.joinTransaction(openPg(client), fn)).rejects.toThrow(/failed transaction/);
            await client.query('ROLLBACK');
            await client.query('BEGIN');
          }
          await client.query('ROLLBACK');
        } finally {
          client.release();
        }
      } finally {
        await pool.end();
      }
    });
  },
});
