import { describe, expect, it } from '@jest/globals';
import { InvalidName, ReservedName } from '../../lib/contract/errors.js';
import type { Store, TxOps } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { type NameVectors, loadVectors } from '../unit/vectors.js';
import { expectError, uid, useEnv, waitFor } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

const vectors = loadVectors<NameVectors>('names.json');

type EntryPoint = (store: Store, name: string) => unknown;
type TxEntryPoint = (tx: TxOps, name: string) => unknown;

/** Every name-bearing entry point of the store (SPEC §4: "every entry point"). */
const storeEntryPoints: [string, EntryPoint][] = [
  ['notify', (s, n) => s.notify(n)],
  ['listen', (s, n) => s.listen(n)],
  ['stream', (s, n) => s.stream(n)],
  ['queue', (s, n) => s.queue(n)],
  ['outbox', (s, n) => s.outbox(n)],
  ['outboxEnqueue', (s, n) => s.outboxEnqueue(n, 1)],
  ['tryLock', (s, n) => s.tryLock(n, 'owner', 1_000)],
  ['schedule (name)', (s, n) => s.schedule(n, '@every 1h', 'q', 1)],
  ['schedule (queue)', (s, n) => s.schedule('names-schedule', '@every 1h', n, 1)],
  ['unschedule', (s, n) => s.unschedule(n)],
  ['getSchedule', (s, n) => s.getSchedule(n)],
];

const txEntryPoints: [string, TxEntryPoint][] = [
  ['tx.enqueue', (tx, n) => tx.enqueue(n, 1)],
  ['tx.publish', (tx, n) => tx.publish(n, 1)],
  ['tx.publishWithKey', (tx, n) => tx.publishWithKey(n, 'k', 1)],
  ['tx.notify', (tx, n) => tx.notify(n)],
  ['tx.saveOffset', (tx, n) => tx.saveOffset(n, 'consumer', 1)],
  ['tx.outboxEnqueue', (tx, n) => tx.outboxEnqueue(n, 1)],
];

/** Names (SPEC §4, conformance/contract/names.json replayed against every entry point). */
export function nameContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('names', () => {
    it.each(storeEntryPoints)(
      '%s rejects reserved names with ReservedName and blank names with InvalidName',
      async (_label, call) => {
        for (const name of vectors.reserved) {
          const err = await expectError(() => call(store(), name), ReservedName);
          expect(err.code).toBe('RESERVED_NAME');
          expect(err.message).toContain(JSON.stringify(name));
        }
        for (const name of vectors.invalid) {
          const err = await expectError(() => call(store(), name), InvalidName);
          expect(err.code).toBe('INVALID_NAME');
          expect(err.message).toContain(JSON.stringify(name));
        }
        await expectError(() => call(store(), 42 as unknown as string), InvalidName);
      },
    );

    it.each(txEntryPoints)(
      '%s rejects reserved names with ReservedName and blank names with InvalidName',
      async (_label, call) => {
        const tx = await openTx(store());
        try {
          for (const name of vectors.reserved) await expectError(() => call(tx, name), ReservedName);
          for (const name of vectors.invalid) await expectError(() => call(tx, name), InvalidName);
        } finally {
          await tx.rollback();
        }
      },
    );

    it('nothing is written by a rejected call', async () => {
      await expectError(() => store().schedule('__alkstore_x', '@every 1s', 'q', 1), ReservedName);
      await expectError(() => store().schedule(uid('names-none'), '@every 1s', '', 1), InvalidName);
      expect(await store().getSchedule('names-schedule')).toBeNull();
      const tx = await openTx(store());
      await expectError(() => tx.publishWithKey('names-stream', '', 1), InvalidName);
      await tx.commit();
      expect(await store().stream('names-stream').readSince(0)).toEqual([]);
    });

    it('name rules are case-sensitive: __ALKSTORE_ is an ordinary prefix', async () => {
      const q = store().queue('__ALKSTORE_lower');
      const id = await q.enqueue('upper');
      expect((await q.getJob(id))!.queue).toBe('__ALKSTORE_lower');
      await q.cancel(id);
    });

    it.each(vectors.valid.map((n) => [n] as const))(
      'the legal name %j works end to end on every mechanism',
      async (name) => {
        const s = store();
        // Queue
        const q = s.queue(name);
        const id = await q.enqueue({ name });
        const job = (await q.claimOne('w'))!;
        expect(job).toMatchObject({ id, queue: name, payload: { name } });
        expect(await job.ack()).toBe(true);
        // Stream
        const st = s.stream(name);
        const offset = await st.publishWithKey(name, { name });
        expect((await env.other.stream(name).readSince(offset - 1)).map((e) => [e.stream, e.key, e.payload])).toEqual([
          [name, name, { name }],
        ]);
        expect(await st.saveOffset(name, offset)).toBe(true);
        expect(await st.getOffset(name)).toBe(offset);
        // Notify
        const wakes = env.other.listen(name);
        try {
          await s.notify(name);
          expect(await wakes.recv(AbortSignal.timeout(10_000))).toEqual({ channel: name });
        } finally {
          wakes.close();
        }
        // Lock
        const lock = (await s.tryLock(name, name, 10_000))!;
        expect(lock).toMatchObject({ name, owner: name });
        expect(await env.other.tryLock(name, 'someone else', 10_000)).toBeNull();
        expect(await lock.release()).toBe(true);
        // Schedule
        const sched = await s.schedule(name, '@every 1h', name, { name });
        expect(sched).toMatchObject({ name, queue: name });
        expect((await env.other.getSchedule(name))!.name).toBe(name);
        expect(await s.unschedule(name)).toBe(true);
        // Outbox, plain and transactional
        const ob = s.outbox(name);
        expect(ob.queue.name).toBe(`__alkstore_outbox:${name}`);
        await s.outboxEnqueue(name, 1);
        await s.withTx(async (tx) => {
          await tx.outboxEnqueue(name, 2);
          await tx.enqueue(name, 3);
          await tx.notify(name);
        });
        const delivered: unknown[] = [];
        while (await ob.runOnce('w', async (j) => void delivered.push(j.payload))) {
          /* drain */
        }
        expect(delivered.sort()).toEqual([1, 2]);
        const fromTx = await waitFor('the transactional job', () => q.claimOne('w'));
        expect(fromTx.payload).toBe(3);
        await fromTx.ack();
      },
    );
  });
}
