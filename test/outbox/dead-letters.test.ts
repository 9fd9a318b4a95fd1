import { describe, expect, it } from '@jest/globals';
import { PermanentError } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { listDead, purgeDead, purgeDeadOlderThan, retryDead } from '../../lib/outbox/index.js';
import { contractEngines, withEngineDb, waitFor } from '../helpers/engines.js';
import { startDispatcher } from './outbox-fixtures.js';

for (const engine of contractEngines()) {
  describe(`outbox dead letters (${engine.name})`, () => {
    let store!: Store;
    withEngineDb(engine, (_db, s) => {
      store = s;
    });

    /** Enqueues and dead-letters `n` messages through the queue contract; resolves to their ids. */
    async function makeDead(outbox: string, n: number): Promise<number[]> {
      const q = store.outbox(outbox).queue;
      const ids = await q.enqueueMany(Array.from({ length: n }, (_, i) => ({ i })));
      const jobs = await q.claimBatch(n, 'test');
      for (const j of jobs) expect(await j.fail(new Error(`dead ${j.id}`))).toBe(true);
      return ids;
    }

    it('lists one outbox’s dead letters in pages ordered by id', async () => {
      const ids = await makeDead('dl-list', 5);
      await makeDead('dl-list-other', 2);
      const first = await listDead(store, { outbox: 'dl-list', limit: 2 });
      expect(first.map((j) => j.id)).toEqual(ids.slice(0, 2));
      const rest = await listDead(store, { outbox: 'dl-list', after: first[1]!.id, limit: 10 });
      expect(rest.map((j) => j.id)).toEqual(ids.slice(2));
      expect(rest.every((j) => j.state === 'dead' && j.lastError === `dead ${j.id}`)).toBe(true);
    });

    it('redrives a dead letter with retryDead: it is delivered again with attempts reset', async () => {
      const outbox = 'dl-redrive';
      const q = store.outbox(outbox).queue;
      const id = await store.outboxEnqueue(outbox, { order: 42 });
      let accept = false;
      const delivered: number[] = [];
      const r = startDispatcher({
        store,
        outbox,
        handler: (job) => {
          if (!accept) throw new PermanentError('downstream rejected it');
          delivered.push(job.attempts);
        },
      });
      try {
        await waitFor('dead-lettered', async () => (await q.getJob(id))?.state === 'dead');
        const [dead] = await listDead(store, { outbox });
        expect(dead).toMatchObject({ id, attempts: 1, lastError: 'permanent: downstream rejected it' });
        accept = true;
        expect(await retryDead(store, outbox, [id])).toEqual({ moved: 1, conflicts: 0, conflictIds: [] });
        await waitFor('redelivered and acked', async () => delivered.length === 1 && (await q.getJob(id)) === null);
      } finally {
        await r.stop();
      }
      expect(delivered).toEqual([1]);
      expect(await listDead(store, { outbox })).toEqual([]);
    });

    it('purges chosen dead letters only', async () => {
      const outbox = 'dl-purge';
      const ids = await makeDead(outbox, 3);
      const live = await store.outboxEnqueue(outbox, { live: true });
      expect(await purgeDead(store, outbox, [ids[0]!, ids[2]!, live])).toBe(2);
      expect((await listDead(store, { outbox })).map((j) => j.id)).toEqual([ids[1]]);
      expect(await store.outbox(outbox).queue.getJob(live)).toMatchObject({ state: 'pending' });
    });

    it('purges dead letters older than an age, by the database clock, across pages', async () => {
      const outbox = 'dl-age';
      const old = await makeDead(outbox, 5);
      const oldDiedAt = Math.max(...(await listDead(store, { outbox })).map((j) => j.diedAt!));
      await waitFor(
        'time to pass on the database clock',
        async () => (await store.now()) > oldDiedAt + 1_500,
        10_000,
        50,
      );
      const fresh = await makeDead(outbox, 1);
      const now = await store.now();
      // Cut between the two groups: older than (now - oldDiedAt - 1) ms means "died at or before oldDiedAt".
      const purged = await purgeDeadOlderThan(store, outbox, now - oldDiedAt - 1, 2);
      expect(purged).toBe(old.length);
      expect((await listDead(store, { outbox })).map((j) => j.id)).toEqual(fresh);
      await expect(purgeDeadOlderThan(store, outbox, 0)).rejects.toThrow(RangeError);
    });
  });
}
