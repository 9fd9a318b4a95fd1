import { describe, expect, it } from '@jest/globals';
import { BulkRunner, newOpId } from '../../lib/dashboard/bulk.js';
import { readFilter } from '../../lib/dashboard/search-query.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';

/** The dashboard's bulk actions keep their progress in memory: bounded by the work in flight plus the last 100 finished. */
describe('bulk operations in memory', () => {
  it('keeps the last 100 finished operations, forgetting older ones as new ones start', async () => {
    const store = await openSqliteStore({ path: ':memory:' });
    try {
      const runner = new BulkRunner(store);
      const ids: string[] = [];
      for (let i = 0; i < 250; i++) {
        const id = newOpId();
        ids.push(id);
        // Distinct filters, so no operation joins a running one.
        const filter = readFilter({ queue: 'bulk-q', state: 'dead', id: String(i + 1) }, 'dead');
        runner.start(id, 'delete', filter, 0, Date.now(), async () => undefined);
        await runner.idle();
      }
      const known = ids.filter((id) => runner.get(id) !== undefined);
      expect(known.length).toBeLessThanOrEqual(101);
      expect(runner.get(ids[0]!)).toBeUndefined();
      expect(runner.get(ids[ids.length - 1]!)?.state).toBe('done');
    } finally {
      await store.close();
    }
  });
});
