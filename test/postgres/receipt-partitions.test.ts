import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Store } from '../../lib/contract/types.js';
import { type EngineDb, describePg, postgres, waitFor } from '../helpers/engines.js';
import { partitionsOf, withClient } from './pg-helpers.js';

/**
 * PostgreSQL only: outbox receipts are partitioned by ranges of message ids, and retention retires
 * a range by dropping its partition once every receipt in it is past `receiptRetentionMs`.
 */
describePg('postgres outbox receipts: retention drops partitions', () => {
  let db: EngineDb;
  let store: Store;
  const s = (): string => `"${db.location}"`;
  const partitions = (): Promise<string[]> => partitionsOf(db.location, 'outbox_receipts');
  const receiptsOf = (outbox: string): Promise<number> =>
    withClient(async (c) =>
      Number((await c.query(`SELECT count(*) AS n FROM ${s()}.outbox_receipts WHERE outbox = $1`, [outbox])).rows[0].n),
    );

  /** One round of the retention runner with the given receipt age. */
  async function retainOnce(receiptRetentionMs: number): Promise<number> {
    const ac = new AbortController();
    let pruned = 0;
    let rounds = 0;
    const errors: unknown[] = [];
    const running = store.runRetention(ac.signal, {
      intervalMs: 20,
      receiptRetentionMs,
      onPrune: (target, n) => {
        if (target === 'outbox receipts') pruned += n;
      },
      onError: (err) => errors.push(err),
      onSweep: () => undefined,
      queues: () => {
        rounds++;
        return [];
      },
    });
    try {
      await waitFor('a retention round', async () => rounds >= 2 || errors.length > 0, 10_000, 10);
    } finally {
      ac.abort();
      await running;
    }
    if (errors.length > 0) throw errors[0];
    return pruned;
  }

  beforeAll(async () => {
    db = await postgres.create();
    store = await db.open();
    // Ranges of 10 ids, from ids above the range of the table kept from before the partitioning.
    await withClient(async (c) => {
      await c.query(`UPDATE ${s()}.partition_widths SET width = 10 WHERE parent = 'outbox_receipts'`);
      await c.query(`SELECT setval(pg_get_serial_sequence('${s()}.jobs', 'id'), 4999999)`);
    });
  });
  afterAll(async () => {
    await db.destroy();
  });

  describe('ranges of message ids', () => {
    it('retention makes the next ranges ahead of the ids issued; old receipts leave by DROP, recent ones stay', async () => {
      // The table from before the partitioning is the range below the first one retention makes.
      expect(await partitions()).toEqual(['outbox_receipts_default', 'outbox_receipts_legacy']);
      await retainOnce(3_600_000);
      const ahead = await partitions();
      expect(ahead.length).toBeGreaterThan(1);
      expect(ahead).toContain('outbox_receipts_default');

      const outbox = store.outbox('parts');
      const ids = await outbox.queue.enqueueMany(Array.from({ length: 25 }, (_, n) => ({ n })));
      await outbox.recordReceipts(ids.map((messageId, k) => ({ messageId, receipt: { broker: 't', seq: k } })));
      expect(await receiptsOf('parts')).toBe(25);
      // A round sees the ranges of those ids full; they stay for the retention period after that.
      await retainOnce(3_600_000);
      expect(await receiptsOf('parts')).toBe(25);
      // The first 20 receipts were delivered two hours ago, the last 5 just now, and the ranges were full then.
      await withClient((c) =>
        c.query(`UPDATE ${s()}.range_partitions SET full_at = full_at - 7200000 WHERE full_at IS NOT NULL`),
      );
      await withClient((c) =>
        c.query(
          `UPDATE ${s()}.outbox_receipts SET delivered_at = delivered_at - 7200000 WHERE outbox = 'parts' AND message_id = ANY($1::bigint[])`,
          [ids.slice(0, 20)],
        ),
      );
      const before = await partitions();
      await retainOnce(3_600_000);
      const after = await partitions();
      // Every receipt older than an hour is gone; the recent ones are kept and still read.
      expect(await receiptsOf('parts')).toBe(5);
      for (const id of ids.slice(0, 20)) expect(await outbox.receipt(id)).toBeNull();
      for (const [k, id] of ids.slice(20).entries())
        expect((await outbox.receipt(id))?.receipt).toEqual({ broker: 't', seq: 20 + k });
      // Whole ranges went by DROP: their partitions are gone; the ranges above the ids issued stay.
      expect(before.filter((p) => !after.includes(p)).length).toBeGreaterThan(0);
      expect(after.length).toBeGreaterThan(1);
      expect(after).toContain('outbox_receipts_default');
    });

    it('a receipt recorded again for the same message replaces the stored one (one row per message)', async () => {
      const outbox = store.outbox('again');
      const [id] = await outbox.queue.enqueueMany([{ n: 1 }]);
      await outbox.recordReceipts([{ messageId: id!, receipt: { broker: 't', seq: 1 } }]);
      await outbox.recordReceipts([{ messageId: id!, receipt: { broker: 't', seq: 2 } }]);
      expect(await receiptsOf('again')).toBe(1);
      expect((await outbox.receipt(id!))?.receipt).toEqual({ broker: 't', seq: 2 });
    });

    it('a full range stays for the retention period, so a late delivery of one of its messages lands in it', async () => {
      const outbox = store.outbox('late');
      // Ids from the next range up (the earlier tests dropped ranges below it), made ahead of them by a
      // round: two widths, so fewer ids than that.
      await withClient((c) =>
        c.query(
          `SELECT setval(pg_get_serial_sequence('${s()}.jobs', 'id'), (SELECT max(hi) - 1 FROM ${s()}.range_partitions WHERE parent = 'outbox_receipts'))`,
        ),
      );
      await retainOnce(3_600_000);
      const ids = await outbox.queue.enqueueMany(Array.from({ length: 15 }, (_, n) => ({ n })));
      // Two rounds: the ranges of those ids are full, none of their messages delivered yet.
      await retainOnce(3_600_000);
      await retainOnce(3_600_000);
      const held = await partitions();
      await outbox.recordReceipts([{ messageId: ids[0]!, receipt: { broker: 't', late: true } }]);
      const where = await withClient(
        async (c) =>
          (
            await c.query<{ p: string }>(
              `SELECT tableoid::regclass::text AS p FROM ${s()}.outbox_receipts WHERE outbox = 'late' AND message_id = $1`,
              [ids[0]],
            )
          ).rows[0]!.p,
      );
      expect(where).not.toMatch(/outbox_receipts_default/);
      expect(held.some((p) => where.endsWith(p))).toBe(true);
    });

    it('a transaction holding the receipts table neither blocks retention nor loses a range: the next round drops it', async () => {
      const outbox = store.outbox('held');
      const ids = await outbox.queue.enqueueMany(Array.from({ length: 25 }, (_, n) => ({ n })));
      await outbox.recordReceipts(ids.map((messageId) => ({ messageId, receipt: { broker: 't' } })));
      await retainOnce(3_600_000);
      await withClient((c) =>
        c.query(`UPDATE ${s()}.outbox_receipts SET delivered_at = delivered_at - 7200000 WHERE outbox = 'held'`),
      );
      await withClient((c) =>
        c.query(`UPDATE ${s()}.range_partitions SET full_at = full_at - 7200000 WHERE full_at IS NOT NULL`),
      );
      const before = await partitions();
      const retire = (): Promise<number> =>
        withClient(async (c) =>
          Number((await c.query(`SELECT ${s()}.retire_receipt_partitions(3600000) AS n`)).rows[0].n),
        );
      await withClient(async (holder) => {
        await holder.query('BEGIN');
        await holder.query(`SELECT count(*) FROM ${s()}.outbox_receipts`);
        // The reader holds the table: the step gives up at once and drops nothing.
        expect(await retire()).toBe(0);
        expect(await partitions()).toEqual(before);
        await holder.query('ROLLBACK');
      });
      await retire();
      expect((await partitions()).length).toBeLessThan(before.length);
    });

    it('receipts retention has not reached stay through any number of rounds', async () => {
      const outbox = store.outbox('kept');
      const ids = await outbox.queue.enqueueMany(Array.from({ length: 30 }, (_, n) => ({ n })));
      await outbox.recordReceipts(ids.map((messageId) => ({ messageId, receipt: { broker: 't', ok: true } })));
      for (let i = 0; i < 3; i++) await retainOnce(3_600_000);
      expect(await receiptsOf('kept')).toBe(30);
      // With an age of 0 every receipt goes, partitions or not.
      await retainOnce(0);
      expect(await receiptsOf('kept')).toBe(0);
    });
  });
});
