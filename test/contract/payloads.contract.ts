import { expect, it } from '@jest/globals';
import { Codec, InvalidOption, PayloadTooLarge } from '../../lib/contract/errors.js';
import type { Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { expectError, uid, useEnv } from './harness.js';

/** Every write entry point that takes a payload, bound to fresh names. */
function payloadWrites(store: Store): [string, (payload: unknown) => Promise<unknown>][] {
  const q = uid('pay-q');
  return [
    ['queue.enqueue', (p) => store.queue(q).enqueue(p)],
    ['queue.enqueueMany', (p) => store.queue(q).enqueueMany([{ ok: 1 }, p])],
    ['queue.enqueueBulk', (p) => store.queue(q).enqueueBulk([{ payload: { ok: 1 } }, { payload: p }])],
    ['store.outboxEnqueue', (p) => store.outboxEnqueue(uid('pay-o'), p)],
    ['outbox.enqueue', (p) => store.outbox(uid('pay-o')).enqueue(p)],
    ['stream.publish', (p) => store.stream(uid('pay-s')).publish(p)],
    ['stream.publishWithKey', (p) => store.stream(uid('pay-s')).publishWithKey('k', p)],
    ['tx.enqueue', (p) => store.withTx((tx) => tx.enqueue(q, p))],
    ['tx.outboxEnqueue', (p) => store.withTx((tx) => tx.outboxEnqueue(uid('pay-o'), p))],
    ['tx.publish', (p) => store.withTx((tx) => tx.publish(uid('pay-s'), p))],
    ['tx.publishWithKey', (p) => store.withTx((tx) => tx.publishWithKey(uid('pay-s'), 'k', p))],
    ['store.schedule', (p) => store.schedule(uid('pay-sched'), '@every 1h', q, p)],
  ];
}

/** Nothing at all was written by the refused calls: no job, no event, no schedule. */
async function expectNothingWritten(store: Store, queues: string[], streams: string[]): Promise<void> {
  for (const q of queues)
    expect({ q, stats: await store.queue(q).stats() }).toMatchObject({ q, stats: { pending: 0, dead: 0 } });
  for (const s of streams) expect({ s, events: await store.stream(s).readSince(0) }).toEqual({ s, events: [] });
}

class Account {
  constructor(readonly id: number) {}
}

/**
 * Payloads are plain JSON (SPEC §2): a value that would come back different is
 * `Codec` naming its path, and one over `maxPayloadBytes` is `PayloadTooLarge`,
 * both before any write and the same on both engines.
 */
export function payloadContract(engine: EngineFixture): void {
  const env = useEnv(engine);

  it.each([
    ['a Date', { at: new Date(0) }, 'payload.at', 'a Date'],
    ['a Map', { tags: new Map([['a', 1]]) }, 'payload.tags', 'a Map'],
    ['a Set', { items: [{ ids: new Set([1]) }] }, 'payload.items[0].ids', 'a Set'],
    ['a Buffer', { file: Buffer.from('hi') }, 'payload.file', 'a Buffer'],
    ['a typed array', { bytes: new Float64Array(2) }, 'payload.bytes', 'binary data'],
    ['a class instance', { account: new Account(1) }, 'payload.account', 'an instance of Account'],
  ])(
    'refuses %s as Codec naming its path, on every write entry point, before any write',
    async (_kind, payload, path, words) => {
      const q = uid('pay-date');
      const s = uid('pay-date-s');
      const writes: [string, () => Promise<unknown>][] = [
        ['queue.enqueue', () => env.store.queue(q).enqueue(payload)],
        ['tx.enqueue', () => env.store.withTx((tx) => tx.enqueue(q, payload))],
        ['stream.publish', () => env.store.stream(s).publish(payload)],
        ['tx.publish', () => env.store.withTx((tx) => tx.publish(s, payload))],
      ];
      for (const [entry, write] of writes) {
        const err = await expectError(write, Codec);
        expect({ entry, message: err.message }).toEqual({
          entry,
          message: expect.stringContaining(`${path}: ${words}`),
        });
      }
      for (const [entry, write] of payloadWrites(env.store)) {
        const err = await expectError(() => write(payload), Codec);
        expect({ entry, message: err.message }).toEqual({ entry, message: expect.stringContaining(words) });
      }
      await expectNothingWritten(env.store, [q], [s]);
    },
  );

  it('a batch names the index of the refused payload and writes none of the batch', async () => {
    const q = uid('pay-batch');
    const many = await expectError(() => env.store.queue(q).enqueueMany([{ ok: 1 }, { at: new Date(0) }]), Codec);
    expect(many.message).toContain('payloads[1].at: a Date');
    const bulk = await expectError(
      () => env.store.queue(q).enqueueBulk([{ payload: { ok: 1 } }, { payload: [new Map()] }]),
      Codec,
    );
    expect(bulk.message).toContain('jobs[1].payload[0]: a Map');
    await expectNothingWritten(env.store, [q], []);
  });

  it('plain objects (also without a prototype), arrays and -0 are accepted; -0 comes back as 0', async () => {
    const q = env.store.queue(uid('pay-ok'));
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: [1, { b: 'c' }] });
    const id = await q.enqueue({ bare, zero: -0 });
    const job = await q.getJob(id);
    expect(job?.payload).toEqual({ bare: { a: [1, { b: 'c' }] }, zero: 0 });
    expect(Object.is((job?.payload as { zero: number }).zero, 0)).toBe(true);
  });

  it('the default maxPayloadBytes is 1 MiB of JSON: 1 MiB is accepted, one byte more refused before any write', async () => {
    const q = env.store.queue(uid('pay-big'));
    const s = uid('pay-big-s');
    const atLimit = 'x'.repeat(1024 * 1024 - 2); // plus the two quotes
    const id = await q.enqueue(atLimit);
    expect((await q.getJob(id))?.payload).toBe(atLimit);
    const err = await expectError(() => q.enqueue(`${atLimit}x`), PayloadTooLarge);
    expect(err.message).toBe(
      'payload is 1048577 bytes as JSON; the limit is 1048576 (the maxPayloadBytes store option)',
    );
    await expectError(() => env.store.stream(s).publish(`${atLimit}x`), PayloadTooLarge);
    expect((await q.stats()).pending).toBe(1);
    await expectNothingWritten(env.store, [], [s]);
  });

  it('maxPayloadBytes is a store option, refused on every payload write entry point before any write', async () => {
    const small = await env.db.open({ maxPayloadBytes: 64 });
    const big = { text: 'é'.repeat(30) }; // 30 characters, 71 bytes of JSON
    for (const [entry, write] of payloadWrites(small)) {
      const err = await expectError(() => write(big), PayloadTooLarge);
      expect({ entry, limit: err.limit, bytes: err.bytes }).toEqual({ entry, limit: 64, bytes: 71 });
    }
    const fits = { text: 'é'.repeat(25) }; // 61 bytes
    for (const [entry, write] of payloadWrites(small))
      expect({ entry, ok: typeof (await write(fits)) }).not.toEqual({ entry, ok: 'undefined' });
  });

  it('a maxPayloadBytes that is not an integer in 1..2^30 is InvalidOption naming it, before the store opens', async () => {
    for (const bad of [0, -1, 1.5, 2 ** 30 + 1, '1mb', Number.NaN]) {
      const err = await expectError(() => env.db.open({ maxPayloadBytes: bad as number }), InvalidOption);
      expect(err.message).toContain('maxPayloadBytes');
    }
  });
}
