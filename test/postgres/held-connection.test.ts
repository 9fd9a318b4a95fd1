import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Database } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { type EngineDb, PG_URL, describePg, postgres, waitFor } from '../helpers/engines.js';
import { withClient } from './pg-helpers.js';
import { openTx } from '../helpers/open-tx.js';

// PostgreSQL-only: a store that owns its pool keeps one connection checked out for statements
// that arrive one at a time (PoolExecutor). These tests pin what that must never change: a
// transaction still gets a connection at once from a small pool, a dead held connection does
// not take the process or the store down, and close() ends every connection.
describePg('postgres held connection', () => {
  let db: EngineDb;
  beforeAll(async () => {
    db = await postgres.create();
  });
  afterAll(async () => {
    await db.destroy();
  });

  /** Backends (not the LISTEN one) whose last statement touched this file's schema. */
  const backends = (state?: string): Promise<number[]> =>
    withClient(async (c) => {
      const r = await c.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
         WHERE query LIKE $1 AND application_name NOT LIKE 'alkstore-listener%' AND pid <> pg_backend_pid()
           AND ($2::text IS NULL OR state = $2::text)`,
        [`%"${db.location}"%`, state ?? null],
      );
      return r.rows.map((row) => row.pid);
    });

  it('a transaction gets the last free connection of a pool of two while statements stream through the held one', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: 2 });
    try {
      const q = store.queue('held-tx');
      // One transaction stays open on one connection of the pool.
      const a = await openTx(store);
      await a.enqueue('held-tx', { tx: 'a' });
      let streaming = true;
      // Autocommit statements back to back: the held connection is never idle long enough to be swept.
      const stream = (async () => {
        let n = 0;
        while (streaming) await q.enqueue({ stream: n++ });
        return n;
      })();
      await waitFor('the stream to run', async () => (await q.stats()).pending > 3);
      // The pool's other connection is the held one, busy with the stream: it must be handed over.
      const b = await openTx(store);
      await b.enqueue('held-tx', { tx: 'b' });
      await b.commit();
      await a.commit();
      streaming = false;
      const streamed = await stream;
      expect((await q.stats()).pending).toBe(streamed + 2);
    } finally {
      await store.close();
    }
  });

  it('a held connection killed by the server: the store keeps working and nothing crashes', async () => {
    const store: Store = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: 2 });
    try {
      const q = store.queue('held-kill');
      // Statements one at a time: the first goes through the pool, the next ones through the held connection.
      for (let i = 0; i < 5; i++) await q.enqueue({ i });
      await waitFor('an idle connection of the store', async () => (await backends('idle')).length > 0);
      const idle = await backends('idle');
      const killed = await withClient((c) =>
        c.query(`SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid`, [idle]),
      );
      expect(killed.rowCount).toBeGreaterThan(0);
      // The next statements may fail with Database while the dead connection is noticed; then they succeed.
      let ok = 0;
      await waitFor('statements to succeed again', async () => {
        try {
          await q.enqueue({ after: true });
          ok += 1;
        } catch (err) {
          expect(err).toBeInstanceOf(Database);
        }
        return ok >= 3;
      });
      const st = await q.stats();
      expect(st.pending).toBe(5 + ok);
      const job = await q.claimOne('w');
      expect(job).not.toBeNull();
      expect(await job!.ack()).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('close() ends every connection, the held one included', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: 3 });
    const q = store.queue('held-close');
    for (let i = 0; i < 5; i++) await q.enqueue({ i });
    await waitFor('a connection of the store', async () => (await backends()).length > 0);
    await store.close();
    await waitFor('every connection of the store to end', async () => (await backends()).length === 0);
  });
});
