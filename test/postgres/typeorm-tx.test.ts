import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { DataSource } from 'typeorm';
import { InvalidOption, ReservedName } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import { type EngineDb, PG_URL, describePg, postgres } from '../helpers/engines.js';
import { flowsThroughJoinedTx } from '../helpers/typeorm-flows.js';
import { keyedEnqueuesThroughJoinedTx } from '../helpers/typeorm-keyed.js';

describePg('postgres withTx(external TypeORM transaction)', () => {
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
      const ops = store.withTx(manager);
      const job = await ops.enqueue('ship', { order: 1 }, { priority: 3 });
      const outboxJob = await ops.outboxEnqueue('mail', { to: 'a@b' });
      const offset = await ops.publishWithKey('orders', 'o-1', { paid: true });
      expect(await ops.saveOffset('orders', 'billing', offset)).toBe(true);
      await ops.notify('orders-changed');
      return { job, outboxJob, offset };
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
      const ops = store.withTx(qr);
      jobId = await ops.enqueue('ghost-q', 'never');
      await ops.publish('ghost-s', 'never');
    } finally {
      await qr.rollbackTransaction();
      await qr.release();
    }
    expect(await orders()).toBe(before);
    expect(await store.queue('ghost-q').getJob(jobId)).toBeNull();
    expect(await store.stream('ghost-s').readSince(0)).toEqual([]);
  });

  it('refuses an EntityManager or QueryRunner with no active transaction, saying so', async () => {
    expect(() => store.withTx(ds.manager)).toThrow(InvalidOption);
    expect(() => store.withTx(ds.manager)).toThrow(/no active transaction/);
    const qr = ds.createQueryRunner();
    try {
      expect(() => store.withTx(qr)).toThrow(/no active transaction/);
      try {
        store.withTx(qr);
      } catch (err) {
        expect((err as InvalidOption).code).toBe('INVALID_OPTION');
      }
    } finally {
      await qr.release();
    }
  });

  it('refuses further ops once the caller committed', async () => {
    const qr = ds.createQueryRunner();
    await qr.connect();
    await qr.startTransaction();
    const ops = store.withTx(qr);
    await ops.enqueue('after-commit', 1);
    await qr.commitTransaction();
    await expect(ops.enqueue('after-commit', 2)).rejects.toThrow(/no active transaction/);
    await qr.release();
    expect((await store.queue('after-commit').stats()).pending).toBe(1);
  });

  it('rejects reserved names on the joined transaction before any SQL', async () => {
    await ds.transaction(async (manager) => {
      const ops = store.withTx(manager);
      await expect(ops.enqueue('__alkstore_x', 1)).rejects.toBeInstanceOf(ReservedName);
      await expect(ops.publish('__alkstore_x', 1)).rejects.toBeInstanceOf(ReservedName);
      // The caller's transaction is still usable.
      await manager.query('SELECT 1');
    });
  });
});
