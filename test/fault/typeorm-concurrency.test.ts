import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DataSource, type EntityManager } from 'typeorm';
import { InvalidOption } from '../../lib/contract/errors.js';
import type { Store, TxOps } from '../../lib/contract/types.js';
import { contractEngines, PG_URL, type EngineDb } from '../helpers/engines.js';
import { drainIdsConcurrently } from '../helpers/outbox-consumer.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';

/**
 * Fault suite: commit-atomic under load. Concurrent callers open TypeORM
 * transactions that write a business row and its outbox message, half of them
 * rolling back, while a consumer drains the outbox beside them. Every committed
 * row has exactly one message, and no rolled-back row has one, on both engines.
 * (On SQLite TypeORM runs every transaction on one connection and does not
 * serialize them: the store's joined path must.)
 */
const CALLERS = 8;
const PER_CALLER = 200;

describe.each(contractEngines().map((e) => [e.name, e] as const))(
  'concurrent TypeORM transactions [%s]',
  (_name, engine) => {
    let db: EngineDb;
    let store: Store;
    let ds: DataSource;
    let table: string;

    beforeAll(async () => {
      db = await engine.create();
      store = await db.open();
      if (engine.kind === 'sqlite') {
        ds = new DataSource({ type: 'better-sqlite3', database: db.location, entities: [] });
        table = 'orders';
      } else {
        ds = new DataSource({ type: 'postgres', url: PG_URL, entities: [], poolSize: CALLERS });
        table = `"${db.location}".orders`;
      }
      await ds.initialize();
      await ds.query(`CREATE TABLE ${table} (id INTEGER PRIMARY KEY, caller INTEGER NOT NULL)`);
    }, 60_000);
    afterAll(async () => {
      await ds.destroy();
      await db.destroy();
    }, 60_000);

    const ph = (n: number): string => (engine.kind === 'sqlite' ? '?' : `$${n}`);

    /** One business transaction: the row, then its message; odd ones roll back after both writes. */
    async function business(tx: TxOps, em: EntityManager, id: number, caller: number): Promise<void> {
      await em.query(`INSERT INTO ${table} (id, caller) VALUES (${ph(1)}, ${ph(2)})`, [id, caller]);
      await tx.outboxEnqueue('orders-out', { id });
      if (id % 2 === 1) throw new Error(`rollback ${id}`);
    }

    it(`${CALLERS} callers × ${PER_CALLER} transactions, half rolled back, through joinTransaction(openTypeOrm(dataSource)): every committed row has its one message, no rolled-back row has one`, async () => {
      const outbox = store.outbox('orders-out').queue;
      const consumer = drainIdsConcurrently(outbox);
      const rejected: unknown[] = [];
      await Promise.all(
        Array.from({ length: CALLERS }, async (_, caller) => {
          for (let k = 0; k < PER_CALLER; k++) {
            const id = caller * PER_CALLER + k;
            const run = store.joinTransaction(openTypeOrm(ds), (tx, em) => business(tx, em, id, caller));
            await run.catch((err: unknown) => {
              if (!(err instanceof Error) || err.message !== `rollback ${id}`) rejected.push(err);
            });
          }
        }),
      );
      const delivered = await consumer.stop();
      expect(rejected).toEqual([]);
      const rows = ((await ds.query(`SELECT id FROM ${table} ORDER BY id`)) as { id: number }[]).map((r) =>
        Number(r.id),
      );
      const even = Array.from({ length: CALLERS * PER_CALLER }, (_, i) => i).filter((i) => i % 2 === 0);
      expect(rows).toEqual(even);
      expect([...delivered].sort((a, b) => a - b)).toEqual(even);
      expect(await outbox.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    }, 120_000);

    it('openTypeOrm(em) inside a transaction TypeORM opened itself is refused on SQLite (naming the DataSource form) and joins on PostgreSQL; nothing is half-written', async () => {
      const base = CALLERS * PER_CALLER;
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          ds.transaction(async (em) => {
            await em.query(`INSERT INTO ${table} (id, caller) VALUES (${ph(1)}, ${ph(2)})`, [base + i, -1]);
            await store.joinTransaction(openTypeOrm(em), (tx) => tx.outboxEnqueue('raw-out', { id: base + i }));
          }),
        ),
      );
      const rows = ((await ds.query(`SELECT id FROM ${table} WHERE caller = -1 ORDER BY id`)) as { id: number }[]).map(
        (r) => Number(r.id),
      );
      const messages = (await store.outbox('raw-out').queue.claimBatch(100, 'w'))
        .map((j) => (j.payload as { id: number }).id)
        .sort((a, b) => a - b);
      expect(messages).toEqual(rows);
      if (engine.kind === 'sqlite') {
        // Each is refused (overlapping ones may fail inside TypeORM first: its savepoints interleave).
        expect(results.every((r) => r.status === 'rejected')).toBe(true);
        expect(results.some((r) => r.status === 'rejected' && r.reason instanceof InvalidOption)).toBe(true);
        expect(messages).toEqual([]);
      } else {
        expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
        expect(rows).toHaveLength(20);
      }
    }, 60_000);
  },
);
