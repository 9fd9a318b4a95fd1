import { describe, expect, it } from '@jest/globals';
import { planStore } from './plan-store.js';
import { CLAIM_CANDIDATES } from '../../lib/engines/sqlite/queue.sql.js';

describe('sqlite claim plan after ANALYZE (engine-only)', () => {
  const db = planStore('alkstore-claim-plan-');

  it('walks the ready index in claim order instead of skip-scanning and sorting every ready job', async () => {
    // One queue, one priority, ready jobs sharing one run_at and many delayed ones each due at its
    // own instant: the statistics ANALYZE writes then make a skip-scan over (queue, priority) with a
    // range on run_at look cheap, followed by a sort of every ready job (what the DEPTH bench hit:
    // claim latency growing with the number of ready jobs).
    const now = Date.now();
    db.conn.db.exec('BEGIN');
    const insert = db.conn.db.prepare(`INSERT INTO __alkstore_jobs
      (queue, state, payload, priority, attempts, max_attempts, visibility_timeout_ms, backoff_base_ms, run_at, enqueued_at)
      VALUES ('deep', 'pending', ?, 0, 0, 3, 60000, 1000, ?, ?)`);
    for (let i = 0; i < 2_000; i++) insert.run(JSON.stringify({ i }), now - 1_000, now - 1_000);
    for (let i = 0; i < 20_000; i++) insert.run(JSON.stringify({ later: i }), now + 3_600_000 + i, now - 1_000);
    db.conn.db.exec('COMMIT');
    db.conn.db.exec('ANALYZE');

    const plan = (
      db.conn.db.prepare(`EXPLAIN QUERY PLAN ${CLAIM_CANDIDATES}`).all({ queue: 'deep', now, limit: 10 }) as {
        detail: string;
      }[]
    ).map((r) => r.detail);
    expect(plan).toContain('SEARCH __alkstore_jobs USING INDEX __alkstore_jobs_pending (queue=?)');
    expect(plan.join('\n')).not.toContain('ANY(');

    const [job] = await db.store.queue('deep').claimBatch(1, 'w');
    expect(job!.payload).toEqual({ i: 0 });
  }, 60_000);
});
