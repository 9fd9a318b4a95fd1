import { expect, it } from '@jest/globals';
import knexFactory, { type Knex } from 'knex';
import { openKnex } from '../../lib/adapters/knex.js';
import { PG_URL } from '../helpers/engines.js';
import { describeAdapter } from './adapter-cases.js';

function open(kind: 'sqlite' | 'postgres', location: string, max: number): Knex {
  return kind === 'sqlite'
    ? knexFactory({ client: 'better-sqlite3', connection: { filename: location }, useNullAsDefault: true })
    : knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max } });
}

describeAdapter({
  name: 'knex',
  engines: ['postgres', 'sqlite'],
  async open(engine, db, table, callers) {
    const k = open(engine.kind, db.location, callers);
    const t = engine.kind === 'sqlite' ? 'orders' : `${db.location}.orders`;
    await k.raw(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`);
    return {
      transaction: (store, fn) =>
        store.joinTransaction(openKnex(k), (tx, trx) =>
          fn(tx, async (id, caller) => void (await trx(t).insert({ id, caller }))),
        ),
      ids: async () => ((await k(t).select('id').orderBy('id')) as { id: number }[]).map((r) => r.id),
      close: () => k.destroy(),
    };
  },
  sqliteOpenOn(path) {
    const k = open('sqlite', path, 1);
    return { open: openKnex(k), close: () => k.destroy() };
  },
  extra(ctx, engine) {
    it('an open trx is joined and its owner commits or rolls back; a finished trx is refused before any write', async () => {
      const { store, db, fixture } = ctx();
      const k = open(engine.kind, db.location, 2);
      const t = engine.kind === 'sqlite' ? 'orders' : `${db.location}.orders`;
      try {
        const trx = await k.transaction();
        await store.joinTransaction(openKnex(trx), async (tx, same) => {
          expect(same).toBe(trx);
          await same(t).insert({ id: 61, caller: 0 });
          await tx.outboxEnqueue('t-out', { id: 61 });
        });
        await trx.rollback();
        expect(await fixture.ids()).not.toContain(61);
        expect((await store.outbox('t-out').queue.stats()).pending).toBe(0);
        await expect(
          store.joinTransaction(openKnex(trx), async (tx) => tx.outboxEnqueue('t-out', { id: 61 })),
        ).rejects.toThrow(/openKnex\(trx\) is a transaction that already committed or rolled back/);
        const trx2 = await k.transaction();
        await store.joinTransaction(openKnex(trx2), async (tx, same) => {
          await same(t).insert({ id: 62, caller: 0 });
          await tx.outboxEnqueue('t-out', { id: 62 });
        });
        await trx2.commit();
        expect(await fixture.ids()).toContain(62);
        const jobs = await store.outbox('t-out').queue.claimBatch(10, 'w');
        expect(jobs.map((j) => j.payload)).toEqual([{ id: 62 }]);
        await store.outbox('t-out').queue.ackBatch(jobs);
        expect(() => openKnex({} as Knex)).toThrow(/openKnex\(knex\) must be a knex instance/);
        const other = open(engine.kind === 'sqlite' ? 'postgres' : 'sqlite', ':memory:', 1);
        await expect(store.joinTransaction(openKnex(other), async () => undefined)).rejects.toThrow(
          /handle but the store is on/,
        );
        await other.destroy();
      } finally {
        await k.destroy();
      }
    });
  },
});
