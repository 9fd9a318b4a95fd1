import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Database } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import type { HeldTx } from '../helpers/open-tx.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';
import { openTx } from '../helpers/open-tx.js';

// PostgreSQL-only (docs/postgres.md, "Several keyed enqueues in your own transaction"): a caller's
// transactions that enqueue the same ordering keys in opposite orders hold each key's lock from
// its enqueue to commit, so PostgreSQL rolls one back. This pins what the docs promise the caller
// sees (a Database error whose cause is 40P01, nothing of the victim committed), and that the
// documented order avoids it.
describePg("postgres key locks in a caller's transactions", () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  async function settle(tx: HeldTx, work: Promise<unknown>): Promise<unknown> {
    try {
      await work;
      await tx.commit();
      return null;
    } catch (err) {
      if (!tx.finished) await tx.rollback();
      return err;
    }
  }

  it('opposite key orders: one transaction is rejected with Database (cause 40P01) and leaves nothing; the other commits', async () => {
    const box = 'opposite';
    const a = await openTx(store);
    const b = await openTx(store);
    await a.outboxEnqueue(box, { tx: 'a', key: 'A' }, { orderingKey: 'A' });
    await b.outboxEnqueue(box, { tx: 'b', key: 'B' }, { orderingKey: 'B' });
    // Each now waits for the key the other holds.
    const [ea, eb] = await Promise.all([
      settle(a, a.outboxEnqueue(box, { tx: 'a', key: 'B' }, { orderingKey: 'B' })),
      settle(b, b.outboxEnqueue(box, { tx: 'b', key: 'A' }, { orderingKey: 'A' })),
    ]);
    const errors = [ea, eb].filter((e) => e !== null);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(Database);
    expect(((errors[0] as Database).cause as { code?: string }).code).toBe('40P01');
    const jobs = await store.admin().listJobs(store.outbox(box).queue.name, { state: 'all' });
    const winner = ea === null ? 'a' : 'b';
    expect(jobs.jobs.map((j) => (j.payload as { tx: string }).tx)).toEqual([winner, winner]);
  });

  it('the documented order (ascending keys in every transaction): the same two transfers both commit', async () => {
    const box = 'ascending';
    const a = await openTx(store);
    const b = await openTx(store);
    await a.outboxEnqueue(box, { tx: 'a', key: 'A' }, { orderingKey: 'A' });
    // b waits for A behind a (it would otherwise have taken B first); a then takes B freely.
    const bWork = settle(
      b,
      (async () => {
        await b.outboxEnqueue(box, { tx: 'b', key: 'A' }, { orderingKey: 'A' });
        await b.outboxEnqueue(box, { tx: 'b', key: 'B' }, { orderingKey: 'B' });
      })(),
    );
    const ea = await settle(a, a.outboxEnqueue(box, { tx: 'a', key: 'B' }, { orderingKey: 'B' }));
    expect(ea).toBeNull();
    expect(await bWork).toBeNull();
    expect((await store.outbox(box).queue.stats()).pending).toBe(4);
  });
});
