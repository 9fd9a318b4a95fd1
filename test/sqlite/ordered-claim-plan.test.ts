import { describe, expect, it } from '@jest/globals';
import { planStore } from './plan-store.js';
import { CLAIM_CANDIDATES } from '../../lib/engines/sqlite/queue.sql.js';

describe('sqlite ordered claims (engine-only)', () => {
  const db = planStore('alkstore-plan-');

  it('a claim walks the ready index only (EXPLAIN QUERY PLAN), and with 100k jobs over 10k keys hands out key heads', async () => {
    const keys = 10_000;
    const perKey = 10;
    // Waiting jobs come first in claim order (run_at 0), heads last (run_at 1).
    db.conn.db.exec('BEGIN');
    const insert = db.conn.db.prepare(`INSERT INTO __alkstore_jobs
      (queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at, ordering_key, blocked)
      VALUES ('ordered', 'pending', '{}', 0, 0, 3, 60000, 1000, ?, 0, ?, ?)`);
    for (let n = 1; n <= perKey; n++)
      for (let k = 1; k <= keys; k++) insert.run(n === 1 ? 1 : 0, `key-${k}`, n === 1 ? 0 : 1);
    db.conn.db.exec('COMMIT');
    db.conn.db.exec('ANALYZE');

    const plan = (
      db.conn.db
        .prepare(`EXPLAIN QUERY PLAN ${CLAIM_CANDIDATES}`)
        .all({ queue: 'ordered', now: Date.now(), limit: 10 }) as { detail: string }[]
    ).map((r) => r.detail);
    expect(plan.join('\n')).toContain('USING INDEX __alkstore_jobs_pending');
    expect(plan.some((d) => /^SCAN __alkstore_jobs\b(?! USING)/.test(d))).toBe(false);

    const jobs = await db.store.queue('ordered').claimBatch(10, 'w');
    expect(jobs).toHaveLength(10);
    expect(new Set(jobs.map((j) => j.orderingKey)).size).toBe(10);
    const blocked = db.conn.db
      .prepare(`SELECT count(*) FROM __alkstore_jobs WHERE state = 'processing' AND blocked = 1`)
      .pluck()
      .get();
    expect(blocked).toBe(0);
  }, 120_000);
});
