import { describe, expect, it } from '@jest/globals';
import { Codec, InvalidArgument, PayloadTooLarge } from '../../lib/contract/errors.js';
import { scheduleHeaders } from '../../lib/contract/schedule-headers.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { searchAll } from './admin-search.contract.js';
import { expectError, uid, useEnv, waitFor, within } from './harness.js';

/** The admin operations behind the dashboard's job editor, workers list, receipts page, history and schedule fires. */
export function adminOpsContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('editJob', () => {
    it('changes a pending job’s payload, priority and run time; claims and counts follow', async () => {
      const q = store().queue(uid('edit'));
      const a = await q.enqueue({ n: 1 });
      const b = await q.enqueue({ n: 2 }, { delayMs: 3_600_000 });
      const admin = store().admin();
      expect((await q.stats()).scheduled).toBe(1);
      // b: due now, first in claim order, new payload.
      expect(await admin.editJob(q.name, b, { payload: { n: 20 }, priority: 5, runAt: await store().now() })).toBe(
        true,
      );
      expect((await q.stats()).scheduled).toBe(0);
      const first = await waitFor('a claim', () => q.claimOne('w'));
      expect(first.id).toBe(b);
      expect(first.payload).toEqual({ n: 20 });
      expect(first.priority).toBe(5);
      // a: pushed an hour out, so nothing is claimable and the counters say scheduled.
      expect(await admin.editJob(q.name, a, { runAt: (await store().now()) + 3_600_000 })).toBe(true);
      expect(await q.claimOne('w')).toBeNull();
      const stats = await q.stats();
      expect([stats.pending, stats.scheduled, stats.processing]).toEqual([1, 1, 1]);
      expect((await q.getJob(a))?.payload).toEqual({ n: 1 });
    });

    it('refuses (false, nothing changed) a job that is not pending: processing, dead, gone, another queue', async () => {
      const q = store().queue(uid('edit-refused'), { maxAttempts: 1 });
      const running = await q.enqueue({ k: 'run' });
      const job = await waitFor('a claim', () => q.claimOne('w'));
      expect(job.id).toBe(running);
      const admin = store().admin();
      expect(await admin.editJob(q.name, running, { payload: { k: 'changed' } })).toBe(false);
      expect(await job.fail(new Error('boom'))).toBe(true);
      expect(await admin.editJob(q.name, running, { priority: 3 })).toBe(false);
      expect(await admin.editJob(q.name, 999_999_999, { priority: 3 })).toBe(false);
      const other = await store().queue(uid('edit-other')).enqueue({ k: 'other' });
      expect(await admin.editJob(q.name, other, { priority: 3 })).toBe(false);
      expect((await q.getJob(running))?.payload).toEqual({ k: 'run' });
      expect(job.payload).toEqual({ k: 'run' });
    });

    it('wakes a listening worker when an edit makes a job due now', async () => {
      const q = store().queue(uid('edit-wake'));
      const wakes = q.listen();
      try {
        const it = wakes[Symbol.asyncIterator]();
        const id = await q.enqueue({ later: true }, { delayMs: 3_600_000 });
        await within('the enqueue’s wake', 10_000, it.next());
        const woke = it.next();
        expect(
          await store()
            .admin()
            .editJob(q.name, id, { runAt: await store().now() }),
        ).toBe(true);
        await within('the edit’s wake', 10_000, woke);
        expect((await q.claimOne('w'))?.id).toBe(id);
      } finally {
        wakes.close();
      }
    });

    it('checks the edit before any I/O: typed errors naming the field', async () => {
      const admin = store().admin();
      const q = uid('edit-bad');
      expect((await expectError(() => admin.editJob(q, 1, {}), InvalidArgument)).message).toMatch(/^edit/);
      expect((await expectError(() => admin.editJob(q, 1, { priority: 1.5 }), RangeError)).message).toContain(
        'edit.priority',
      );
      expect((await expectError(() => admin.editJob(q, 1, { runAt: Number.NaN }), RangeError)).message).toContain(
        'edit.runAt',
      );
      expect((await expectError(() => admin.editJob(q, 1, { payload: { n: 1n } }), Codec)).message).toContain(
        'edit.payload',
      );
      await expectError(() => admin.editJob(q, 1, { payload: 'x'.repeat(2_000_000) }), PayloadTooLarge);
      await expectError(() => admin.editJob(q, -1, { priority: 1 }), RangeError);
    });
  });

  describe('workers', () => {
    it('lists the workers holding jobs by id and queue, with their deadlines; a lapsed one says so', async () => {
      const q = store().queue(uid('workers'));
      await q.enqueueMany([{ i: 1 }, { i: 2 }, { i: 3 }]);
      const a = await q.claimBatch(2, `host-a:101:${q.name}`);
      const b = await q.claimBatch(1, `host-b:202:${q.name}`, { leaseMs: 1 });
      expect(a.length + b.length).toBe(3);
      const mine = await waitFor('b’s lease to lapse', async () => {
        const w = (await store().admin().workers()).filter((x) => x.queue === q.name);
        return w.length === 2 && w[1]!.lapsed ? w : null;
      });
      expect(mine.map((w) => [w.workerId, w.jobs, w.lapsed])).toEqual([
        [`host-a:101:${q.name}`, 2, false],
        [`host-b:202:${q.name}`, 1, true],
      ]);
      expect(mine[0]!.latestDeadline).toBeGreaterThanOrEqual(mine[0]!.earliestDeadline);
      for (const j of a) await j.ack();
      expect((await store().admin().workers()).filter((x) => x.queue === q.name).map((w) => w.workerId)).toEqual([
        `host-b:202:${q.name}`,
      ]);
    });
  });

  describe('receipts', () => {
    it('pages an outbox’s receipts latest delivery first, keyset by (delivered at, message id)', async () => {
      const ob = store().outbox(uid('rcpt'));
      await ob.recordReceipts(
        Array.from({ length: 5 }, (_, i) => ({
          messageId: i + 1,
          receipt: { broker: 'nats-jetstream', stream: 'ORDERS', seq: 100 + i },
        })),
      );
      await ob.recordReceipts([{ messageId: 9, receipt: { broker: 'rabbitmq', exchange: 'x', deliveryTag: 7 } }]);
      const admin = store().admin();
      const seen: number[] = [];
      let cursor: string | undefined;
      for (;;) {
        const page = await admin.receipts(ob.name, { limit: 2, cursor });
        expect(page.receipts.length).toBeLessThanOrEqual(2);
        seen.push(...page.receipts.map((r) => r.messageId));
        if (page.next === null) break;
        cursor = page.next;
      }
      expect(seen[0]).toBe(9);
      expect([...seen].sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 9]);
      const [latest] = (await admin.receipts(ob.name, { limit: 1 })).receipts;
      expect(latest).toMatchObject({ outbox: ob.name, messageId: 9, receipt: { broker: 'rabbitmq', deliveryTag: 7 } });
      expect((await admin.receipts(uid('none'))).receipts).toEqual([]);
      expect((await expectError(() => admin.receipts(ob.name, { cursor: 'nope' }), InvalidArgument)).message).toMatch(
        /^cursor/,
      );
    });
  });

  describe('history and schedule fires (searchJobs)', () => {
    it('state finished lists the jobs that left the live states, newest first; a header filter finds a schedule’s fires', async () => {
      const q = store().queue(uid('hist'), { maxAttempts: 1 });
      const fired = await q.enqueue({ n: 1 }, { headers: scheduleHeaders('nightly', 1_000) });
      const dies = await q.enqueue({ n: 2 });
      const live = await q.enqueue({ n: 3 }, { headers: scheduleHeaders('hourly', 2_000) });
      for (let i = 0; i < 2; i++) {
        const j = await waitFor('a claim', () => q.claimOne('w'));
        await j.fail(new Error(`failed ${j.id}`));
      }
      const admin = store().admin();
      expect(await searchAll(admin, q.name, { state: 'finished' })).toEqual([dies, fired]);
      expect(await searchAll(admin, q.name, { state: 'finished', error: `failed ${dies}` })).toEqual([dies]);
      expect(await searchAll(admin, q.name, { header: { name: 'alkstore-schedule', equals: 'nightly' } })).toEqual([
        fired,
      ]);
      expect(await searchAll(admin, q.name, { header: { name: 'alkstore-schedule', equals: 'hourly' } })).toEqual([
        live,
      ]);
      expect(await searchAll(admin, q.name, { header: { name: 'alkstore-schedule', equals: 'weekly' } })).toEqual([]);
      expect(
        (await expectError(() => admin.searchJobs(q.name, { header: { name: 'a b', equals: 'x' } }), InvalidArgument))
          .message,
      ).toMatch(/^header\.name/);
    });
  });
}
