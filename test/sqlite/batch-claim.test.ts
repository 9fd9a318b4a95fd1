import { describe, expect, it } from '@jest/globals';
import { planStore } from './plan-store.js';
import { ACK_PLAIN_ROWS, CLAIM_ROWS } from '../../lib/engines/sqlite/queue.sql.js';

// A claim updates its whole batch with one statement (CLAIM_ROWS), a plain ack batch deletes with one (ACK_PLAIN_ROWS).
describe('sqlite batch claim and plain batch ack (engine-only)', () => {
  const db = planStore('alkstore-batch-claim-');

  it('looks each row up by id, once per item', () => {
    const plan = (sql: string, params: Record<string, unknown>): string[] =>
      (db.conn.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as { detail: string }[]).map((r) => r.detail);
    const claim = plan(CLAIM_ROWS, { items: '[]', now: 0, lease: null, worker: 'w' });
    expect(claim).toContain('SEARCH __alkstore_jobs USING INTEGER PRIMARY KEY (rowid=?)');
    expect(claim.join('\n')).not.toMatch(/SCAN __alkstore_jobs/);
    const ack = plan(ACK_PLAIN_ROWS, { items: '[]', now: 0 });
    expect(ack).toContain('SEARCH __alkstore_jobs USING INTEGER PRIMARY KEY (rowid=?)');
    expect(ack.join('\n')).not.toMatch(/SCAN __alkstore_jobs/);
  });

  it('returns the batch in claim order, each row with a token of its own, a lapsed row with its attempt recorded', async () => {
    const q = db.store.queue('batch-order');
    for (const [n, priority] of [
      [1, 0],
      [2, 5],
      [3, 0],
      [4, 9],
      [5, 5],
    ] as const)
      await q.enqueue({ n }, { priority });
    // Job 4 (the highest priority) is claimed first, and its lease then lapses: the next claim takes it over.
    const [first] = await q.claimBatch(1, 'w0');
    expect(first!.payload).toEqual({ n: 4 });
    db.conn.db.prepare('UPDATE __alkstore_jobs SET claimed_until = 0 WHERE id = ?').run(first!.id);

    const jobs = await q.claimBatch(10, 'w1');
    // Claim order: priority descending, then run_at, then id; the lapsed job keeps its place.
    expect(jobs.map((j) => (j.payload as { n: number }).n)).toEqual([4, 2, 5, 1, 3]);
    expect(new Set(jobs.map((j) => j.claimToken)).size).toBe(5);
    expect(jobs.map((j) => j.attempts)).toEqual([2, 1, 1, 1, 1]);
    expect(jobs[0]!.claimToken).not.toBe(first!.claimToken);
    const attempts = db.conn.db
      .prepare('SELECT attempt, outcome, worker_id AS worker FROM __alkstore_job_attempts WHERE job_id = ?')
      .all(first!.id);
    expect(attempts).toEqual([{ attempt: 1, outcome: 'lapsed', worker: 'w0' }]);

    // The old claim of the lapsed job is fenced; so is a claim whose lease passed. The rest are acked in one batch.
    const lapsedHere = jobs[4]!;
    db.conn.db.prepare('UPDATE __alkstore_jobs SET claimed_until = 0 WHERE id = ?').run(lapsedHere.id);
    expect(await q.ackBatch([first!])).toBe(0);
    expect(await q.ackBatch(jobs)).toBe(4);
    const left = db.conn.db.prepare(`SELECT id FROM __alkstore_jobs WHERE queue = 'batch-order'`).all();
    expect(left).toEqual([{ id: lapsedHere.id }]);
  });
});
