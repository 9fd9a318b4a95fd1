import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { Database } from '../../lib/contract/errors.js';
import { PoolExecutor } from '../../lib/engines/postgres/connection.js';
import { NOTIFY_ONLY } from '../../lib/engines/postgres/notify/own-wakes.js';
import { PG_URL, describePg, waitFor } from '../helpers/engines.js';

// PostgreSQL-only: a statement that found someone waiting for a connection runs on a one-off
// checkout (PoolExecutor). Whether pg-pool keeps that connection after the statement fails
// depends on what failed: a statement error leaves a good connection, a connection error does not.
describePg('postgres one-off checkout of the pool executor', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  });
  afterAll(async () => {
    await pool.end();
  });

  /**
   * Runs `text` on a one-off checkout: the pool's only connection is busy when the statement asks
   * for it, and another checkout waits behind it, so the executor must give it back after the
   * statement. Returns the backend pid of the statement's connection and of the one the waiter got.
   */
  async function oneOff(text: string): Promise<{ failed: unknown; before: number; after: number }> {
    const exec = new PoolExecutor(pool, NOTIFY_ONLY, true);
    const busy = await pool.connect();
    const before = (await busy.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const statement = exec.run({ name: `one_off_${Math.random().toString(36).slice(2)}`, text }, []).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor('the statement to wait for the connection', () => Promise.resolve(pool.waitingCount === 1));
    const waiter = pool.connect();
    await waitFor('the second checkout to wait', () => Promise.resolve(pool.waitingCount === 2));
    busy.release();
    const failed = await statement;
    const next = await waiter;
    try {
      const after = (await next.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      return { failed, before, after };
    } finally {
      next.release();
      exec.close();
    }
  }

  it('a statement error (division by zero) gives the connection back to the pool, not destroyed', async () => {
    const r = await oneOff('SELECT 1 / 0');
    expect(r.failed).toBeInstanceOf(Database);
    expect(r.after).toBe(r.before);
  });

  it('a connection error (its backend terminated) destroys the connection: the next checkout gets a new one', async () => {
    const r = await oneOff('SELECT pg_terminate_backend(pg_backend_pid())');
    expect(r.failed).toBeInstanceOf(Database);
    expect(r.after).not.toBe(r.before);
  });
});
