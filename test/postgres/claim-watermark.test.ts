import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { ClaimOpts, Store } from '../../lib/contract/types.js';
import { FOLLOWING_CLAIM, nextDueOf } from '../../lib/internal/next-due.js';
import { type EngineDb, describePg, postgres } from '../helpers/engines.js';

/** The claim options a worker core sends (`FOLLOWING_CLAIM`): such a claim may start after the watermark. */
const following: ClaimOpts & { [FOLLOWING_CLAIM]: true } = { [FOLLOWING_CLAIM]: true };

/**
 * PostgreSQL only: a worker's claim reads from where the store's last claim of the queue stopped
 * (`q_claim_after`, ClaimGate's watermark). It takes what a claim from the head would take of the
 * ready jobs after the watermark, higher priorities first, and a short one says when to come back.
 */
describePg('postgres claim watermark', () => {
  let db: EngineDb;
  let store: Store;
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
  });
  afterAll(async () => {
    await db.destroy();
  });

  it('claims after the watermark in claim order, a higher priority first, and a short claim is due back within the sweep', async () => {
    const q = store.queue('wm-order');
    const ids = await q.enqueueMany(Array.from({ length: 10 }, (_, i) => i));
    const first = await q.claimBatch(3, 'w', following);
    expect(first.map((j) => j.id)).toEqual(ids.slice(0, 3));
    const second = await q.claimBatch(3, 'w', following);
    expect(second.map((j) => j.id)).toEqual(ids.slice(3, 6));
    const urgent = await q.enqueue('urgent', { priority: 5 });
    const rest = await q.claimBatch(10, 'w', following);
    expect(rest.map((j) => j.id)).toEqual([urgent, ...ids.slice(6)]);
    const due = nextDueOf(rest);
    expect(typeof due).toBe('number');
    expect(due!).toBeLessThanOrEqual(1_000);
    expect(await q.ackBatch([...first, ...second, ...rest])).toBe(11);
  });

  it("a job this store's ack promotes (an ordering key's next, with its old run_at) is claimed by the next worker claim", async () => {
    const q = store.queue('wm-promote');
    const a = await q.enqueue('a', { orderingKey: 'k' });
    const b = await q.enqueue('b', { orderingKey: 'k' });
    const later = await q.enqueue('later');
    const [ja, jl] = await q.claimBatch(5, 'w', following);
    expect([ja?.id, jl?.id]).toEqual([a, later]);
    await ja!.ack();
    const next = await q.claimBatch(5, 'w', following);
    expect(next.map((j) => j.id)).toEqual([b]);
    await next[0]!.ack();
    await jl!.ack();
  });
});
