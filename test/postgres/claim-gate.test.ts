import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { LISTENER_RECONNECTED_CHANNEL } from '../../lib/contract/names.js';
import type { Queue, Store } from '../../lib/contract/types.js';
import { openPostgresStore } from '../../lib/engines/postgres/index.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';
import { withClient } from './pg-helpers.js';

/**
 * PostgreSQL only: a store claims a backlogged queue without reading its settings only while its
 * LISTEN connection would have told it of a change (ClaimGate). Without a working listener every
 * claim reads the settings, so a pause that sent no wake this store could see is still honoured.
 */
describePg('postgres claim settings cache', () => {
  let db: EngineDb;
  let store: Store;
  let other: Store;
  const opened: Store[] = [];
  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
    other = await db.open();
  });
  afterAll(async () => {
    for (const s of opened) await s.close();
    await db.destroy();
  });

  /** 300 jobs on `name` through `s`, claimed in full batches of 10 three times. */
  async function backlogged(s: Store, name: string): Promise<Queue> {
    const q = s.queue(name);
    await q.enqueueMany(Array.from({ length: 300 }, (_, i) => i));
    for (let i = 0; i < 3; i++) expect(await q.ackBatch(await q.claimBatch(10, 'w'))).toBe(10);
    return q;
  }

  /** Pauses `queue` behind the library's back: no notification, as a writer without the wake would. */
  async function pauseSilently(queue: string): Promise<void> {
    await withClient((c) =>
      c.query(
        `INSERT INTO "${db.location}".queue_settings (queue, paused) VALUES ($1, true) ON CONFLICT (queue) DO UPDATE SET paused = true`,
        [queue],
      ),
    );
  }

  it('a store without LISTEN reads the settings on every claim: a pause on another store holds at its next claim', async () => {
    const deaf = await openPostgresStore({ connectionString: PG_URL, schema: db.location, poolSize: 2, listen: false });
    opened.push(deaf);
    const q = await backlogged(deaf, 'no-listen');
    await other.queue('no-listen').pause();
    expect(await q.claimBatch(10, 'w')).toEqual([]);
    expect((await q.stats()).pending).toBe(270);
  });

  it('after a listener gap every queue is read again: a change the gap could have hidden is honoured at the next claim', async () => {
    const q = await backlogged(store, 'gap');
    await pauseSilently('gap');
    const r = store.listen('gap-watch');
    try {
      const terminated = await withClient((c) =>
        c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          `alkstore-listener:${db.location}`.slice(0, 63),
        ]),
      );
      expect(terminated.rowCount).toBeGreaterThan(0);
      const deadline = AbortSignal.timeout(15_000);
      for (;;) {
        const w = await r.recv(deadline);
        if (w === null) throw new Error('the listener did not reconnect within 15 s');
        if (w.channel === LISTENER_RECONNECTED_CHANNEL) break;
      }
    } finally {
      r.close();
    }
    expect(await q.claimBatch(10, 'w')).toEqual([]);
  }, 30_000);

  it("this store's own pause holds at once for its next claim, however backlogged", async () => {
    const q = await backlogged(store, 'own');
    await q.pause();
    expect(await q.claimBatch(10, 'w')).toEqual([]);
    await q.resume();
    await q.setRateLimit({ max: 2, perMs: 3_600_000 });
    expect(await q.claimBatch(10, 'w')).toHaveLength(2);
  });
});
