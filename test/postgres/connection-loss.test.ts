import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Database } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { type EngineDb, PG_URL, describePg, postgres, waitFor } from '../helpers/engines.js';
import { recordingLogger, withClient } from './pg-helpers.js';
import { openTx } from '../helpers/open-tx.js';

describePg('postgres connection loss inside a transaction', () => {
  let db: EngineDb;
  let store: Store;
  const logger = recordingLogger();
  beforeAll(async () => {
    db = await postgres.create();
    store = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: 2, logger });
  });
  afterAll(async () => {
    await store.close();
    await db.destroy();
  });

  it('a backend killed while idle in transaction fails the transaction with Database, and the store keeps working', async () => {
    const tx = await openTx(store);
    await tx.enqueue('lost', { n: 1 });
    const killed = await withClient((c) =>
      c.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE state = 'idle in transaction' AND query LIKE $1`,
        [`%"${db.location}".jobs%`],
      ),
    );
    expect(killed.rowCount).toBe(1);
    await waitFor('the store to notice the dead connection', () =>
      logger.lines.some((l) => l.includes('transaction connection failed')),
    );
    await expect(tx.enqueue('lost', { n: 2 })).rejects.toBeInstanceOf(Database);
    await tx.rollback().catch((err: unknown) => expect(err).toBeInstanceOf(Database));
    // Nothing of the dead transaction landed, and the pool hands out healthy connections.
    expect((await store.queue('lost').stats()).pending).toBe(0);
    await store.withTx((t) => t.enqueue('lost', { n: 3 }));
    expect((await store.queue('lost').claimOne('w'))?.payload).toEqual({ n: 3 });
  });
});
