import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AlkstoreError, InvalidOption } from '../../lib/contract/errors.js';
import type { Store, TxOpen, TxOps } from '../../lib/contract/types.js';
import { openSqliteStore } from '../../lib/engines/sqlite/index.js';
import { contractEngines, type EngineDb, type EngineFixture } from '../helpers/engines.js';
import { drainIdsConcurrently } from '../helpers/outbox-consumer.js';

/** One ORM over one test database: a table `orders (id, caller)` and the adapter's `open`. */
export interface AdapterFixture {
  /** `store.joinTransaction` with the adapter's `open`: `fn` gets alkstore's tx and `insert`, a business write through the ORM's own transaction handle. */
  transaction<T>(
    store: Store,
    fn: (tx: TxOps, insert: (id: number, caller: number) => Promise<void>) => Promise<T>,
  ): Promise<T>;
  /** Ids in `orders`, ascending, read outside any transaction. */
  ids(): Promise<number[]>;
  close(): Promise<void>;
}

export interface AdapterCase {
  readonly name: string;
  readonly engines: readonly ('sqlite' | 'postgres')[];
  /** `table` is the qualified name of the business table to create (and use) on `db`. */
  open(engine: EngineFixture, db: EngineDb, table: string, callers: number): Promise<AdapterFixture>;
  /** SQLite: the adapter's `open` over a connection on the file at `path`, and how to close that connection. */
  sqliteOpenOn?(path: string): { open: TxOpen<unknown>; close(): Promise<void> };
  /** Extra engine-specific tests, in the same describe block. */
  extra?(
    ctx: () => { store: Store; fixture: AdapterFixture; db: EngineDb; table: string },
    engine: EngineFixture,
  ): void;
}

const CALLERS = 6;
const PER_CALLER = 60;

async function drain(store: Store, name: string): Promise<number[]> {
  const out: number[] = [];
  const q = store.outbox(name).queue;
  for (;;) {
    const jobs = await q.claimBatch(100, 'check');
    if (jobs.length === 0) return out.sort((a, b) => a - b);
    for (const j of jobs) out.push((j.payload as { id: number }).id);
    await q.ackBatch(jobs);
  }
}

/**
 * The TypeORM seam's cases (test/fault/typeorm-concurrency.test.ts) for one ORM adapter, on every
 * engine it supports: commit, rollback, a finished transaction, and several callers with half of
 * their transactions rolled back while a consumer drains (every committed row has its one message).
 */
export function describeAdapter(c: AdapterCase): void {
  const engines = contractEngines().filter((e) => c.engines.includes(e.kind));
  describe.each(engines.map((e) => [e.name, e] as const))(`${c.name} adapter [%s]`, (_n, engine) => {
    let db: EngineDb;
    let store: Store;
    let fixture: AdapterFixture;
    let table: string;
    beforeAll(async () => {
      db = await engine.create();
      store = await db.open();
      table = engine.kind === 'sqlite' ? 'orders' : `"${db.location}".orders`;
      fixture = await c.open(engine, db, table, CALLERS);
    }, 60_000);
    afterAll(async () => {
      await fixture?.close();
      await db?.destroy();
    }, 60_000);

    it('commit: the business row and its outbox message are both there', async () => {
      const r = await fixture.transaction(store, async (tx, insert) => {
        await insert(1, 0);
        await tx.outboxEnqueue('c-out', { id: 1 });
        return 'done';
      });
      expect(r).toBe('done');
      expect(await fixture.ids()).toContain(1);
      expect(await drain(store, 'c-out')).toEqual([1]);
    });

    it('rollback: a throw after both writes leaves neither the row nor the message, and rejects with that error', async () => {
      const boom = new Error('boom');
      await expect(
        fixture.transaction(store, async (tx, insert) => {
          await insert(2, 0);
          await tx.outboxEnqueue('r-out', { id: 2 });
          await tx.enqueue('r-queue', { id: 2 });
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await fixture.ids()).not.toContain(2);
      expect(await drain(store, 'r-out')).toEqual([]);
      expect(await store.queue('r-queue').stats()).toMatchObject({ pending: 0 });
    });

    it('a transaction already finished: its tx kept past the callback refuses every write with a typed error, and writes nothing', async () => {
      let kept: TxOps | undefined;
      await fixture.transaction(store, async (tx) => {
        kept = tx;
      });
      await expect(kept!.outboxEnqueue('f-out', { id: 3 })).rejects.toBeInstanceOf(AlkstoreError);
      await expect(kept!.enqueue('f-queue', { id: 3 })).rejects.toBeInstanceOf(AlkstoreError);
      await expect(kept!.notify('f-chan')).rejects.toBeInstanceOf(AlkstoreError);
      expect(await drain(store, 'f-out')).toEqual([]);
      expect(await store.queue('f-queue').stats()).toMatchObject({ pending: 0 });
    });

    it(`${CALLERS} callers × ${PER_CALLER} transactions, half rolled back, while a consumer drains: every committed row has its one message, no rolled-back row has one`, async () => {
      const base = 1000;
      const outbox = store.outbox('k-out').queue;
      const consumer = drainIdsConcurrently(outbox);
      const rejected: unknown[] = [];
      await Promise.all(
        Array.from({ length: CALLERS }, async (_, caller) => {
          for (let k = 0; k < PER_CALLER; k++) {
            const id = base + caller * PER_CALLER + k;
            await fixture
              .transaction(store, async (tx, insert) => {
                await insert(id, caller);
                await tx.outboxEnqueue('k-out', { id });
                if (id % 2 === 1) throw new Error(`rollback ${id}`);
              })
              .catch((err: unknown) => {
                if (!(err instanceof Error) || err.message !== `rollback ${id}`) rejected.push(err);
              });
          }
        }),
      );
      const delivered = await consumer.stop();
      expect(rejected).toEqual([]);
      const even = Array.from({ length: CALLERS * PER_CALLER }, (_, i) => base + i).filter((i) => i % 2 === 0);
      expect((await fixture.ids()).filter((i) => i >= base)).toEqual(even);
      expect([...delivered].sort((a, b) => a - b)).toEqual(even);
      expect(await outbox.stats()).toMatchObject({ pending: 0, processing: 0, dead: 0 });
    }, 120_000);

    if (engine.kind === 'sqlite' && c.sqliteOpenOn) {
      const openOn = c.sqliteOpenOn.bind(c);
      it("SQLite: a connection on another file than the store (one with an alkstore schema of its own) is refused naming both files, nothing is written on either, and it still joins its own file's store (engine-only)", async () => {
        const dir = mkdtempSync(join(tmpdir(), 'alkstore-other-file-'));
        const otherPath = join(dir, 'other.db');
        // Another store's file: alkstore's statements would succeed there, in the wrong database.
        const otherStore = await openSqliteStore({ path: otherPath });
        const handle = openOn(otherPath);
        try {
          let ran = false;
          const err = await store
            .joinTransaction(handle.open, async (tx) => {
              ran = true;
              await tx.outboxEnqueue('o-out', { id: 4 });
            })
            .catch((e: unknown) => e);
          expect(err).toBeInstanceOf(InvalidOption);
          expect((err as Error).message).toContain(realpathSync(otherPath));
          expect((err as Error).message).toContain(realpathSync(db.location));
          expect(ran).toBe(false);
          expect(await drain(store, 'o-out')).toEqual([]);
          expect(await drain(otherStore, 'o-out')).toEqual([]);
          // The same connection joins the store of its own file, and this store still refuses it afterwards.
          await otherStore.joinTransaction(handle.open, (tx) => tx.outboxEnqueue('o-own', { id: 5 }));
          expect(await drain(otherStore, 'o-own')).toEqual([5]);
          const again = await store.joinTransaction(handle.open, async () => undefined).catch((e: unknown) => e);
          expect(again).toBeInstanceOf(InvalidOption);
        } finally {
          await handle.close();
          await otherStore.close();
          rmSync(dir, { recursive: true, force: true });
        }
      });
    }

    c.extra?.(() => ({ store, fixture, db, table }), engine);
  });
}
