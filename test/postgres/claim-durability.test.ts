import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { InvalidOption } from '../../lib/contract/errors.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';

// PostgreSQL-only: `claimDurability` decides whether a claim's own transaction waits for its
// WAL flush. 'deferred' (the default) sets synchronous_commit = off for that transaction only.
describePg('postgres claimDurability', () => {
  let db: EngineDb;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await postgres.create();
    // One connection: every statement of the store and of this test shares it, so a setting
    // leaking out of a claim's transaction would be seen by the SHOW below.
    pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  });
  afterAll(async () => {
    await pool.end();
    await db.destroy();
  });

  it('refuses anything but "deferred" or "immediate", naming the option', async () => {
    for (const bad of ['later', '', 1, true]) {
      const err = await openPostgresStore({
        connectionString: PG_URL,
        schema: db.location,
        claimDurability: bad as never,
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidOption);
      expect((err as Error).message).toContain('claimDurability');
    }
  });

  it('each claim statement turns synchronous_commit off for its own transaction only when deferred', async () => {
    const store = await openPostgresStore({ connectionString: PG_URL, schema: db.location });
    await store.queue('sync').enqueueMany([1, 2, 3, 4]);
    await store.close();
    const sql = engineSql(db.location).queue;
    const c = await pool.connect();
    try {
      await c.query('SET synchronous_commit = local');
      const seen = async (
        text: string,
        params: unknown[],
      ): Promise<{ inside: string; after: string; claimed: number }> => {
        await c.query('BEGIN');
        const r = await c.query<{ id: string | null }>(text, params);
        const inside = (await c.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!
          .synchronous_commit;
        await c.query('COMMIT');
        const after = (await c.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!
          .synchronous_commit;
        return { inside, after, claimed: r.rows.filter((row) => row.id !== null).length };
      };
      expect(await seen(sql.claim.text, ['sync', 1, null, 'w', 'c:x', true])).toEqual({
        inside: 'off',
        after: 'local',
        claimed: 1,
      });
      expect(await seen(sql.claim.text, ['sync', 1, null, 'w', 'c:x', false])).toEqual({
        inside: 'local',
        after: 'local',
        claimed: 1,
      });
      expect(await seen(sql.claimPlain.text, ['sync', 1, null, 'w', true])).toEqual({
        inside: 'off',
        after: 'local',
        claimed: 1,
      });
      expect(await seen(sql.claimPlain.text, ['sync', 1, null, 'w', false])).toEqual({
        inside: 'local',
        after: 'local',
        claimed: 1,
      });
    } finally {
      await c.query('RESET synchronous_commit');
      c.release();
    }
  });

  it('claims through the store leave the pooled connection as they found it, with either setting', async () => {
    for (const claimDurability of ['deferred', 'immediate'] as const) {
      const store = await openPostgresStore({ pool, schema: db.location, claimDurability });
      try {
        await pool.query('SET synchronous_commit = remote_write');
        const q = store.queue(`pool-${claimDurability}`);
        await q.enqueueMany(Array.from({ length: 30 }, (_, i) => i));
        const got: number[] = [];
        // Full batches: after the first full claim the plain claim statement serves them.
        for (let batch = await q.claimBatch(10, 'w'); batch.length > 0; batch = await q.claimBatch(10, 'w')) {
          for (const job of batch) got.push(job.payloadAs<number>());
          expect(await q.ackBatch(batch)).toBe(batch.length);
        }
        expect(got.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
        expect(
          (await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit,
        ).toBe('remote_write');
      } finally {
        await pool.query('RESET synchronous_commit');
        await store.close();
      }
    }
  });
});
