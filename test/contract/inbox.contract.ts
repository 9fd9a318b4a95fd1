import { describe, expect, it } from '@jest/globals';
import { InvalidArgument, InvalidName, InvalidOption, ReservedName } from '../../lib/contract/errors.js';
import { readEnvelope } from '../../lib/contract/envelope.js';
import { openTypeOrm } from '../../lib/adapters/typeorm.js';
import type { Store, TxOps } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { openDataSource } from '../helpers/data-source.js';
import { expectError, pause, uid, untilDbPasses, useEnv } from './harness.js';

/** Inbox, delivery receipts and the message envelope (SPEC §11, issue #26). */
export function inboxContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  /** The consumer's effect: a job in a business queue, committed with the claim. */
  async function consume(s: Store, inbox: string, messageId: string, effects: string, hold = 0): Promise<string> {
    return s.withTx(async (tx) => {
      const r = await s.inbox(inbox).claim(tx, messageId);
      if (r === 'claimed') {
        await tx.enqueue(effects, { messageId });
        if (hold > 0) await pause(hold);
      }
      return r;
    });
  }

  async function effectCount(queue: string): Promise<number> {
    return (await store().queue(queue).stats()).pending;
  }

  describe('inbox', () => {
    it('claims a message id once: a later claim of the same id is a duplicate and runs no effect', async () => {
      const inbox = uid('ib');
      const effects = uid('effects');
      expect(await consume(store(), inbox, 'm-1', effects)).toBe('claimed');
      expect(await consume(store(), inbox, 'm-1', effects)).toBe('duplicate');
      expect(await consume(env.other, inbox, 'm-1', effects)).toBe('duplicate');
      expect(await consume(store(), inbox, 'm-2', effects)).toBe('claimed');
      expect(await effectCount(effects)).toBe(2);
      expect(await store().inbox(inbox).get('m-1')).toMatchObject({
        inbox,
        messageId: 'm-1',
        state: 'done',
        attempts: 1,
        lastError: null,
      });
      // Scoped by inbox: another consumer claims the same id for itself.
      expect(await consume(store(), uid('ib-other'), 'm-1', effects)).toBe('claimed');
    });

    it('a rolled-back claim leaves no trace: the redelivered message is claimed again', async () => {
      const inbox = uid('ib-rb');
      const effects = uid('effects');
      await expect(
        store().withTx(async (tx) => {
          expect(await store().inbox(inbox).claim(tx, 'm')).toBe('claimed');
          await tx.enqueue(effects, 1);
          throw new Error('effect failed');
        }),
      ).rejects.toThrow('effect failed');
      expect(await store().inbox(inbox).get('m')).toBeNull();
      expect(await consume(store(), inbox, 'm', effects)).toBe('claimed');
      expect(await effectCount(effects)).toBe(1);
    });

    it('two concurrent copies of one message from two stores run the effect exactly once', async () => {
      const inbox = uid('ib-race');
      const effects = uid('effects');
      for (let i = 0; i < 5; i++) {
        const id = `m-${i}`;
        const results = await Promise.all([
          consume(store(), inbox, id, effects, 20),
          consume(env.other, inbox, id, effects, 20),
        ]);
        expect(results.sort()).toEqual(['claimed', 'duplicate']);
      }
      expect(await effectCount(effects)).toBe(5);
    });

    it('fail counts attempts after a rollback, lets a retry claim the message, and goes dead at maxAttempts', async () => {
      const inbox = store().inbox(uid('ib-fail'), { maxAttempts: 3 });
      const effects = uid('effects');
      expect(await inbox.fail('a', new Error('boom 1'))).toBe('retry');
      expect(await inbox.get('a')).toMatchObject({ state: 'failed', attempts: 1, lastError: 'boom 1', doneAt: null });
      expect(await consume(store(), inbox.name, 'a', effects)).toBe('claimed');
      expect(await inbox.get('a')).toMatchObject({ state: 'done', attempts: 2, lastError: null });
      // A message already done stays done: a late failure report never makes it dead.
      expect(await inbox.fail('a', 'late')).toBe('retry');
      expect((await inbox.get('a'))!.state).toBe('done');

      expect(await inbox.fail('b', 'x')).toBe('retry');
      expect(await inbox.fail('b', 'y')).toBe('retry');
      expect(await inbox.fail('b', 'z')).toBe('dead');
      expect(await inbox.get('b')).toMatchObject({ state: 'dead', attempts: 3, lastError: 'z' });
      expect(await consume(store(), inbox.name, 'b', effects)).toBe('dead');
      expect(await inbox.fail('b', 'again')).toBe('dead');
      expect(await effectCount(effects)).toBe(1);
      expect(await store().inbox(uid('ib-one'), { maxAttempts: 1 }).fail('c', 'once')).toBe('dead');
    });

    it('computes the retention floor from the redelivery horizon and refuses a prune below it, naming both', async () => {
      const inbox = store().inbox(uid('ib-floor'), {
        maxDeliveries: 4,
        ackWaitMs: 30_000,
        maxBackoffMs: 60_000,
        producerHorizonMs: 120_000,
      });
      expect(inbox.settings.retentionFloorMs).toBe(4 * 30_000 + 60_000 + 120_000);
      expect(store().inbox(uid('ib-default')).settings).toMatchObject({
        maxAttempts: 5,
        maxDeliveries: 5,
        ackWaitMs: 30_000,
        maxBackoffMs: 300_000,
        producerHorizonMs: 120_000,
        retentionFloorMs: 570_000,
      });
      const err = await expectError(() => inbox.prune(60_000), InvalidOption);
      expect(err.message).toContain('olderThanMs');
      expect(err.message).toContain('60000');
      expect(err.message).toContain('300000');
      expect(await inbox.prune()).toBe(0);
    });

    it('prune deletes done entries past the floor and keeps failed and dead ones', async () => {
      const inbox = store().inbox(uid('ib-prune'), {
        maxAttempts: 1,
        maxDeliveries: 1,
        ackWaitMs: 1,
        maxBackoffMs: 0,
        producerHorizonMs: 0,
      });
      const effects = uid('effects');
      expect(await consume(store(), inbox.name, 'old', effects)).toBe('claimed');
      expect(await inbox.fail('dead', 'x')).toBe('dead');
      const doneAt = (await inbox.get('old'))!.doneAt!;
      await untilDbPasses(store(), doneAt + 5);
      expect(await inbox.prune(1)).toBe(1);
      expect(await inbox.get('old')).toBeNull();
      expect((await inbox.get('dead'))!.state).toBe('dead');
    });

    it('claims inside a caller-owned TypeORM transaction, committed or rolled back with the business write', async () => {
      const inbox = uid('ib-typeorm');
      const effects = uid('effects');
      const ds = await openDataSource(engine, env.db);
      try {
        const run = (fail: boolean) =>
          store().joinTransaction(openTypeOrm(ds), async (ops: TxOps) => {
            const r = await store().inbox(inbox).claim(ops, 'm');
            if (r === 'claimed') await ops.enqueue(effects, 'effect');
            if (fail) throw new Error('rolled back');
            return r;
          });
        await expect(run(true)).rejects.toThrow('rolled back');
        expect(await store().inbox(inbox).get('m')).toBeNull();
        expect(await run(false)).toBe('claimed');
        expect(await run(false)).toBe('duplicate');
        expect(await effectCount(effects)).toBe(1);
      } finally {
        await ds.destroy();
      }
    });

    it('refuses bad input with typed errors before any I/O', async () => {
      await expectError(() => store().inbox(''), InvalidName);
      await expectError(() => store().inbox('__alkstore_x'), ReservedName);
      await expectError(() => store().inbox('ok', { maxAttempts: 0 }), InvalidOption);
      await expectError(() => store().inbox('ok', { ackWaitMs: -1 }), InvalidOption);
      await expectError(() => store().inbox('ok', { typo: 1 } as never), InvalidOption);
      const inbox = store().inbox(uid('ib-bad'));
      await expectError(() => inbox.get(''), InvalidName);
      await expectError(() => inbox.fail('x'.repeat(1025), 'e'), InvalidName);
      await expectError(() => inbox.prune(-1), InvalidArgument);
      await expectError(() => inbox.claim(null as never, 'm'), InvalidOption);
      await store().withTx(async (tx) => {
        await expectError(() => tx.inboxClaim('__alkstore_x', 'm'), ReservedName);
        await expectError(() => tx.inboxClaim('ok', ''), InvalidName);
      });
    });
  });

  describe('delivery receipts', () => {
    it('stores a broker receipt per delivered message, readable from another store, upserted and pruned', async () => {
      const ob = uid('ob-receipts');
      await store()
        .outbox(ob)
        .recordReceipts([
          { messageId: 7, receipt: { broker: 'nats-jetstream', stream: 'ORDERS', seq: 42, duplicate: false } },
          { messageId: 8, receipt: { broker: 'nats-jetstream', stream: 'ORDERS', seq: 43, duplicate: false } },
        ]);
      expect(await env.other.outbox(ob).receipt(7)).toMatchObject({
        outbox: ob,
        messageId: 7,
        receipt: { broker: 'nats-jetstream', stream: 'ORDERS', seq: 42, duplicate: false },
      });
      await store()
        .outbox(ob)
        .recordReceipts([
          { messageId: 7, receipt: { broker: 'nats-jetstream', stream: 'ORDERS', seq: 42, duplicate: true } },
        ]);
      expect((await store().outbox(ob).receipt(7))!.receipt.duplicate).toBe(true);
      expect(await store().outbox(uid('ob-none')).receipt(7)).toBeNull();
      const at = Math.max(
        (await store().outbox(ob).receipt(7))!.deliveredAt,
        (await store().outbox(ob).receipt(8))!.deliveredAt,
      );
      await untilDbPasses(store(), at + 5);
      expect(await store().outbox(ob).pruneReceipts(1)).toBe(2);
      expect(await store().outbox(ob).receipt(8)).toBeNull();
    });

    it('ackDelivered acks the messages still claimed and stores every receipt in the same write', async () => {
      const name = uid('ob-ackd');
      const ob = store().outbox(name);
      await ob.queue.enqueueMany([1, 2, 3]);
      const [a, b, c] = await ob.queue.claimBatch(3, 'relay-1');
      const receipt = (seq: number) => ({ broker: 'nats-jetstream', stream: 'ORDERS', seq, duplicate: false });
      // b's claim token is stale: its ack is fenced off, its receipt is stored all the same.
      expect(
        await ob.ackDelivered([
          { job: a!, receipt: receipt(1) },
          { job: { id: b!.id, claimToken: c!.claimToken }, receipt: receipt(2) },
        ]),
      ).toBe(1);
      expect(await env.other.outbox(name).queue.getJob(a!.id)).toBeNull();
      expect((await ob.queue.getJob(b!.id))!.state).toBe('processing');
      expect((await env.other.outbox(name).receipt(a!.id))!.receipt).toEqual(receipt(1));
      expect((await ob.receipt(b!.id))!.receipt).toEqual(receipt(2));
      expect(await ob.receipt(c!.id)).toBeNull();
      expect(await ob.queue.stats()).toMatchObject({ pending: 0, processing: 2 });
      expect(await ob.ackDelivered([])).toBe(0);
    });

    it('ackDelivered refuses a malformed delivery before any write', async () => {
      const ob = store().outbox(uid('ob-ackd-bad'));
      await ob.queue.enqueue(1);
      const [job] = await ob.queue.claimBatch(1, 'relay-1');
      const ok = { broker: 'rabbitmq', confirmed: true };
      expect(
        (
          await expectError(
            () =>
              ob.ackDelivered([
                { job: job!, receipt: ok },
                { job: job!, receipt: { broker: 'x', nested: {} } as never },
              ]),
            InvalidArgument,
          )
        ).message,
      ).toContain('deliveries[1].receipt.nested');
      expect(
        (await expectError(() => ob.ackDelivered([{ job: null as never, receipt: ok }]), InvalidArgument)).message,
      ).toContain('deliveries[0].job');
      expect(
        (await expectError(() => ob.ackDelivered([{ job: { id: -1, claimToken: 't' }, receipt: ok }]), InvalidArgument))
          .message,
      ).toContain('deliveries[0].job.id');
      expect((await expectError(() => ob.ackDelivered(null as never), InvalidArgument)).message).toContain(
        'deliveries',
      );
      expect((await ob.queue.getJob(job!.id))!.state).toBe('processing');
      expect(await ob.receipt(job!.id)).toBeNull();
    });

    it('refuses a malformed receipt before any write', async () => {
      const ob = store().outbox(uid('ob-bad-receipt'));
      await expectError(() => ob.recordReceipts([{ messageId: -1, receipt: { broker: 'x' } }]), InvalidArgument);
      await expectError(() => ob.recordReceipts([{ messageId: 1, receipt: { seq: 1 } as never }]), InvalidArgument);
      await expectError(
        () => ob.recordReceipts([{ messageId: 1, receipt: { broker: 'x', nested: {} } as never }]),
        InvalidArgument,
      );
      await expectError(() => ob.receipt(-1), InvalidArgument);
    });
  });

  describe('message envelope', () => {
    it('outboxEnqueue stores the envelope as headers, read back typed; envelope fields win over same-named headers', async () => {
      const ob = uid('ob-env');
      const id = await store().withTx((tx) =>
        tx.outboxEnqueue(
          ob,
          { total: 5 },
          {
            envelope: { type: 'order.placed', version: 2, correlationId: 'req-1', causationId: 'cmd-9' },
            headers: { tenant: 't1', 'message-type': 'ignored' },
          },
        ),
      );
      const job = (await env.other.outbox(ob).queue.getJob(id))!;
      expect(job.headers).toEqual({
        tenant: 't1',
        'message-type': 'order.placed',
        'message-version': '2',
        'content-type': 'application/json',
        'correlation-id': 'req-1',
        'causation-id': 'cmd-9',
      });
      expect(readEnvelope(id, job.headers)).toMatchObject({
        messageId: String(id),
        type: 'order.placed',
        version: 2,
        contentType: 'application/json',
        correlationId: 'req-1',
        causationId: 'cmd-9',
      });
      const plain = await store().outboxEnqueue(ob, 1);
      expect(readEnvelope(plain, (await store().outbox(ob).queue.getJob(plain))!.headers)).toMatchObject({
        type: null,
        version: null,
        correlationId: null,
      });
    });

    it('refuses a bad envelope naming the field, before any write', async () => {
      const ob = uid('ob-env-bad');
      await expectError(() => store().outboxEnqueue(ob, 1, { envelope: { type: ' ' } }), InvalidArgument);
      await expectError(() => store().outboxEnqueue(ob, 1, { envelope: { type: 't', version: 0 } }), InvalidArgument);
      await expectError(
        () => store().outboxEnqueue(ob, 1, { envelope: { type: 't', kind: 'x' } as never }),
        InvalidArgument,
      );
      await expectError(
        () => store().withTx((tx) => tx.outboxEnqueue(ob, 1, { envelope: null as never })),
        InvalidArgument,
      );
      expect((await store().outbox(ob).queue.stats()).pending).toBe(0);
    });
  });
}
