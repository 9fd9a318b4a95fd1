import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { InvalidOption, ReservedName } from '../../lib/contract/errors.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';
import type { Store } from '../../lib/contract/types.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';
import { flowsThroughJoinedTx } from '../helpers/typeorm-flows.js';
import { keyedEnqueuesThroughJoinedTx } from '../helpers/typeorm-keyed.js';

describePg(
  'postgres joinTransaction(openTypeOrm(entityManager)): a TypeORM transaction the caller opened (engine-only)',
  () => {
    let db: EngineDb;
    let store: Store;
    let ds: DataSource;
    beforeAll(async () => {
      db = await postgres.create();
      store = await db.open();
      ds = new DataSource({ type: 'postgres', url: PG_URL, poolSize: 2 });
      await ds.initialize();
      await ds.query(`CREATE TABLE "${db.location}".orders (id serial PRIMARY KEY, note text NOT NULL)`);
    });
    afterAll(async () => {
      await ds?.destroy();
      await db.destroy();
    });

    const orders = async (): Promise<number> =>
      Number((await ds.query(`SELECT count(*) AS n FROM "${db.location}".orders`))[0].n);

    it('commits jobs, events, offsets and the business row together through dataSource.transaction(manager)', async () => {
      const before = await orders();
      const ids = await ds.transaction(async (manager) => {
        await manager.query(`INSERT INTO "${db.location}".orders (note) VALUES ($1)`, ['paid']);
        return store.joinTransaction(openTypeOrm(manager), async (ops, em) => {
          expect(em).toBe(manager);
          const job = await ops.enqueue('ship', { order: 1 }, { priority: 3 });
          const outboxJob = await ops.outboxEnqueue('mail', { to: 'a@b' });
          const offset = await ops.publishWithKey('orders', 'o-1', { paid: true });
          expect(await ops.saveOffset('orders', 'billing', offset)).toBe(true);
          await ops.notify('orders-changed');
          return { job, outboxJob, offset };
        });
      });
      expect(await orders()).toBe(before + 1);
      const info = await store.queue('ship').getJob(ids.job);
      expect(info).toMatchObject({ state: 'pending', priority: 3, payload: { order: 1 } });
      expect(await store.outbox('mail').queue.getJob(ids.outboxJob)).toMatchObject({
        maxAttempts: 5,
        visibilityTimeoutMs: 60_000,
      });
      const [event] = await store.stream('orders').readSince(ids.offset - 1);
      expect(event).toMatchObject({ offset: ids.offset, key: 'o-1', payload: { paid: true } });
      expect(await store.stream('orders').getOffset('billing')).toBe(ids.offset);
    });

    it('keyed enqueues (uniqueKey, orderingKey, headers) work through the joined transaction as through the store', () =>
      keyedEnqueuesThroughJoinedTx(ds, store));

    it('a flow (tx.enqueueFlow, tx.enqueue with dependsOn) commits with the business row, a rollback leaves none of it, a bad flow is refused before any write', () =>
      flowsThroughJoinedTx(ds, store, {
        insert: (em, note) => em.query(`INSERT INTO "${db.location}".orders (note) VALUES ($1)`, [note]),
        count: async (note) =>
          Number((await ds.query(`SELECT count(*) AS n FROM "${db.location}".orders WHERE note = $1`, [note]))[0].n),
      }));

    it('a rollback of the QueryRunner drops the job and the event with the business row', async () => {
      const qr = ds.createQueryRunner();
      await qr.connect();
      await qr.startTransaction();
      const before = await orders();
      let jobId = 0;
      try {
        await qr.query(`INSERT INTO "${db.location}".orders (note) VALUES ($1)`, ['ghost']);
        jobId = await store.joinTransaction(openTypeOrm(qr.manager), async (ops) => {
          await ops.publish('ghost-s', 'never');
          return ops.enqueue('ghost-q', 'never');
        });
      } finally {
        await qr.rollbackTransaction();
        await qr.release();
      }
      expect(await orders()).toBe(before);
      expect(await store.queue('ghost-q').getJob(jobId)).toBeNull();
      expect(await store.stream('ghost-s').readSince(0)).toEqual([]);
    });

    it('refuses an EntityManager with no active transaction, saying so, before running fn', async () => {
      let ran = false;
      const fn = async (): Promise<void> => void (ran = true);
      await expect(store.joinTransaction(openTypeOrm(ds.manager), fn)).rejects.toThrow(InvalidOption);
      await expect(store.joinTransaction(openTypeOrm(ds.manager), fn)).rejects.toThrow(/no active transaction/);
      const qr = ds.createQueryRunner();
      try {
        const err = await store.joinTransaction(openTypeOrm(qr.manager), fn).catch((e: unknown) => e);
        expect((err as InvalidOption).code).toBe('INVALID_OPTION');
        expect((err as Error).message).toMatch(/no active transaction/);
      } finally {
        await qr.release();
      }
      expect(ran).toBe(false);
    });

    it('refuses further ops once the caller committed', async () => {
      const qr = ds.createQueryRunner();
      await qr.connect();
      await qr.startTransaction();
      const ops = await store.joinTransaction(openTypeOrm(qr.manager), async (tx) => {
        await tx.enqueue('after-commit', 1);
        return tx;
      });
      await qr.commitTransaction();
      await expect(ops.enqueue('after-commit', 2)).rejects.toThrow(/joined transaction that has ended/);
      await qr.release();
      expect((await store.queue('after-commit').stats()).pending).toBe(1);
    });

    it('rejects reserved names on the joined transaction before any SQL', async () => {
      await ds.transaction(async (manager) => {
        await store.joinTransaction(openTypeOrm(manager), async (ops) => {
          await expect(ops.enqueue('__alkstore_x', 1)).rejects.toBeInstanceOf(ReservedName);
          await expect(ops.publish('__alkstore_x', 1)).rejects.toBeInstanceOf(ReservedName);
        });
        // The caller's transaction is still usable.
        await manager.query('SELECT 1');
      });
    });
  },
);
