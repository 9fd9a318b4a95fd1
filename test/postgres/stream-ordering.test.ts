import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { StreamEvent, Store } from '../../lib/contract/types.js';
import { type EngineDb, describePg, postgres, waitFor } from '../helpers/engines.js';
import { withClient } from './pg-helpers.js';
import { openTx } from '../helpers/open-tx.js';

/** True once some backend of this schema waits on a row lock of the stream counter table. */
async function aPublisherIsBlocked(schema: string): Promise<boolean> {
  const r = await withClient((c) =>
    c.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE wait_event_type = 'Lock' AND query LIKE '%stream_heads%' AND query LIKE $1`,
      [`%"${schema}"%`],
    ),
  );
  return r.rows[0].n > 0;
}

describePg('postgres stream offsets follow commit order', () => {
  let db: EngineDb;
  let store: Store;
  let reader: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
    reader = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('a second publisher waits on the first; the subscriber sees 1 then 2 with no gap and never skips the late commit', async () => {
    const sub = reader.stream('late').subscribe('c');
    const seen: StreamEvent[] = [];
    const pump = (async () => {
      for (;;) {
        const e = await sub.next();
        if (e === null) return;
        seen.push(e);
      }
    })();

    const first = await openTx(store);
    expect(await first.publish('late', { from: 'first' })).toBe(1);
    const second = await openTx(store);
    let secondOffset: number | null = null;
    const secondPublish = second.publish('late', { from: 'second' }).then((o) => (secondOffset = o));
    // The second transaction is blocked on the stream's counter row, not handed offset 2 ahead of the first's commit.
    await waitFor('the second publisher to block on the counter row', () => aPublisherIsBlocked(db.location));
    expect(secondOffset).toBeNull();
    expect(await reader.stream('late').readSince(0)).toEqual([]);

    await first.commit();
    await secondPublish;
    expect(secondOffset).toBe(2);
    await waitFor('the first event to reach the subscriber', () => seen.length >= 1);
    expect(seen.map((e) => e.offset)).toEqual([1]);

    await second.commit();
    await waitFor('the second event to reach the subscriber', () => seen.length >= 2);
    expect(seen.map((e) => [e.offset, (e.payload as { from: string }).from])).toEqual([
      [1, 'first'],
      [2, 'second'],
    ]);
    sub.close();
    await pump;
  });

  it('when the first publisher rolls back, the waiting one takes its offset: no gap', async () => {
    const first = await openTx(store);
    expect(await first.publishWithKey('rb', 'k', 'dropped')).toBe(1);
    const second = await openTx(store);
    const secondPublish = second.publish('rb', 'kept');
    await waitFor('the second publisher to block on the counter row', () => aPublisherIsBlocked(db.location));
    await first.rollback();
    expect(await secondPublish).toBe(1);
    await second.commit();
    const events = await reader.stream('rb').readSince(0);
    expect(events.map((e) => [e.offset, e.key, e.payload])).toEqual([[1, null, 'kept']]);
  });

  it('publishers of different streams do not wait for each other', async () => {
    const a = await openTx(store);
    await a.publish('independent-a', 1);
    const b = await openTx(store);
    // Resolves while `a` is still open: the counter rows are per stream.
    expect(await b.publish('independent-b', 1)).toBe(1);
    await b.commit();
    await a.commit();
  });

  it('many concurrent publishers on one stream get offsets 1..n with no gap, read back in order', async () => {
    const n = 40;
    const offsets = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 === 0 ? store : reader).withTx(async (tx) => tx.publish('burst', { i })),
      ),
    );
    expect([...offsets].sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const events = await reader.stream('burst').readSince(0);
    expect(events.map((e) => e.offset)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });
});
