import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { engineSql } from '../../lib/engines/postgres/context.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';
import { explainAnalyzed, indexesUsed, pagesOf, withClient } from './pg-helpers.js';

describePg('postgres claim cost', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('a claim reads a handful of pages however large the backlog of dead, future and in-flight rows', async () => {
    const s = `"${db.location}"`;
    const backlog = 40_000;
    await withClient(async (c) => {
      const cols = 'queue, state, payload, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at';
      await c.query(
        `INSERT INTO ${s}.jobs (${cols}, died_at) SELECT 'work', 'dead', '{}', 3, 1000, 1000, 0, 0, 0 FROM generate_series(1, $1::int)`,
        [backlog],
      );
      await c.query(
        `INSERT INTO ${s}.jobs (${cols}) SELECT 'work', 'pending', '{}', 3, 1000, 1000, 9999999999999, 0 FROM generate_series(1, $1::int)`,
        [backlog],
      );
      await c.query(
        `INSERT INTO ${s}.jobs (${cols}, claimed_until, claim_token) SELECT 'work', 'processing', '{}', 3, 1000, 1000, 0, 0, 9999999999999, gen_random_uuid() FROM generate_series(1, $1::int)`,
        [backlog],
      );
      await c.query(`ANALYZE ${s}.jobs`);
    });
    const ready = await store.queue('work').enqueueMany([1, 2, 3]);

    const claim = engineSql(db.location).queue.claim;
    const plan = await withClient(async (c) => {
      return explainAnalyzed(c, claim.text, ['work', 2, null, 'w', 'c:wake', true]);
    });
    const pages = pagesOf(plan);
    // A scan of the table would read thousands of pages; the partial indexes keep it to a few dozen.
    expect(pages).toBeLessThan(300);
    expect([...indexesUsed(plan)]).toEqual(expect.arrayContaining(['jobs_pending_idx']));
    const claimed = await withClient((c) =>
      c.query(`SELECT id FROM ${s}.jobs WHERE state = 'processing' AND worker_id = 'w' ORDER BY id`),
    );
    expect(claimed.rows.map((r) => Number(r.id))).toEqual(ready.slice(0, 2));

    // The plain claim (no settings read, no burial) walks the same partial indexes.
    const plainClaim = engineSql(db.location).queue.claimPlain;
    const plain = await withClient(async (c) => {
      return explainAnalyzed(c, plainClaim.text, ['work', 1, null, 'p', true]);
    });
    expect(pagesOf(plain)).toBeLessThan(300);
    expect([...indexesUsed(plain)]).toEqual(expect.arrayContaining(['jobs_pending_idx']));
    const plainClaimed = await withClient((c) =>
      c.query(`SELECT id FROM ${s}.jobs WHERE state = 'processing' AND worker_id = 'p' ORDER BY id`),
    );
    expect(plainClaimed.rows.map((r) => Number(r.id))).toEqual(ready.slice(2, 3));
  }, 60_000);

  it('an ordered claim reads only key heads: bounded pages with 100k jobs over 10k keys', async () => {
    const s = `"${db.location}"`;
    const keys = 10_000;
    const perKey = 10;
    await withClient(async (c) => {
      // Waiting (blocked) jobs come first in claim order (run_at 0), heads last (run_at 1): a claim
      // that walked waiting rows would read ~90k of them before the first head.
      const cols =
        'queue, state, payload, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at, ordering_key, blocked';
      await c.query(
        `INSERT INTO ${s}.jobs (${cols})
         SELECT 'ordered', 'pending', '{}', 3, 60000, 1000, CASE WHEN n = 1 THEN 1 ELSE 0 END, 0, 'key-' || k, n > 1
         FROM generate_series(1, $2::int) AS n, generate_series(1, $1::int) AS k ORDER BY n, k`,
        [keys, perKey],
      );
      await c.query(`ANALYZE ${s}.jobs`);
    });
    const claim = engineSql(db.location).queue.claim;
    const plan = await withClient(async (c) => {
      return explainAnalyzed(c, claim.text, ['ordered', 10, null, 'w', 'c:wake', true]);
    });
    const pages = pagesOf(plan);
    // Measured: about 160 pages for a claim of 10.
    expect(pages).toBeLessThan(300);
    expect([...indexesUsed(plan)]).toEqual(expect.arrayContaining(['jobs_pending_idx']));
    const claimed = await withClient((c) =>
      c.query<{ ordering_key: string; blocked: boolean }>(
        `SELECT ordering_key, blocked FROM ${s}.jobs WHERE state = 'processing' AND queue = 'ordered'`,
      ),
    );
    expect(claimed.rows).toHaveLength(10);
    expect(new Set(claimed.rows.map((r) => r.ordering_key)).size).toBe(10);
    expect(claimed.rows.every((r) => !r.blocked)).toBe(true);
  }, 120_000);
});
