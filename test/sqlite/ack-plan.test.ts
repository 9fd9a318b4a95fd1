import { describe, expect, it } from '@jest/globals';
import { planStore } from './plan-store.js';
import { ACK_PLAIN_ROWS, ACK_ROWS } from '../../lib/engines/sqlite/queue.sql.js';

describe('sqlite batch ack plan after ANALYZE (engine-only)', () => {
  const db = planStore('alkstore-ack-plan-');

  it('looks the acked jobs up by id, not by a scan of every processing job', async () => {
    // Statistics taken while nothing was processing make the processing index look free to scan:
    // a batch ack then read every job in flight for each batch.
    const q = db.store.queue('acks');
    await q.enqueueMany(Array.from({ length: 2_000 }, (_, i) => ({ i })));
    db.conn.db.exec('ANALYZE');

    for (const sql of [ACK_PLAIN_ROWS, ACK_ROWS]) {
      const plan = (
        db.conn.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ items: '[[1, "t"]]', now: Date.now() }) as {
          detail: string;
        }[]
      ).map((r) => r.detail);
      expect(plan).toContain('SEARCH __alkstore_jobs USING INTEGER PRIMARY KEY (rowid=?)');
      expect(plan.join('\n')).not.toContain('__alkstore_jobs_processing');
    }

    // The fence still holds: only the claims of this batch, with their own tokens, are acked.
    const jobs = await q.claimBatch(3, 'w');
    expect(await q.ackBatch([jobs[0]!, { id: jobs[1]!.id, claimToken: 'not-the-token' } as never])).toBe(1);
    expect((await q.stats()).processing).toBe(2);
  }, 60_000);
});
