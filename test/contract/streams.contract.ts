import { describe, expect, it } from '@jest/globals';
import { Codec, InvalidName } from '../../lib/contract/errors.js';
import type { EventReceiver, StreamEvent, Store } from '../../lib/contract/types.js';
import type { EngineFixture } from '../helpers/engines.js';
import { type CodecVectors, loadVectors } from '../unit/vectors.js';
import { expectError, pause, uid, useEnv, waitFor, within } from './harness.js';
import { openTx } from '../helpers/open-tx.js';

/** The next event within a generous deadline; fails (instead of hanging) when none comes. */
async function nextSoon(sub: EventReceiver, timeoutMs = 10_000): Promise<StreamEvent> {
  const e = await sub.next(AbortSignal.timeout(timeoutMs));
  if (e === null) throw new Error(`no event on ${sub.stream} for ${sub.consumer} within ${timeoutMs} ms`);
  return e;
}

/** Collects a subscription in the background until stopped. */
function collect(sub: EventReceiver): { events: StreamEvent[]; done: Promise<void> } {
  const events: StreamEvent[] = [];
  const done = (async () => {
    for await (const e of sub) events.push(e);
  })();
  return { events, done };
}

/** Streams (SPEC §6, seed 002 streams + verification backlog). */
export function streamContract(engine: EngineFixture): void {
  const env = useEnv(engine);
  const store = (): Store => env.store;

  describe('publish and read', () => {
    it('assigns offsets 1, 2, 3 per stream, independently across streams', async () => {
      const a = store().stream(uid('s-a'));
      const b = store().stream(uid('s-b'));
      expect(await a.publish('a1')).toBe(1);
      expect(await a.publish('a2')).toBe(2);
      expect(await b.publish('b1')).toBe(1);
      expect(await a.publishWithKey('k', 'a3')).toBe(3);
      expect(await env.other.stream(b.name).publish('b2')).toBe(2);
    });

    it('readSince returns events after the offset, ascending, with the full event shape', async () => {
      const s = store().stream(uid('s-read'));
      const t0 = await store().now();
      for (const p of [{ n: 1 }, { n: 2 }, { n: 3 }]) await s.publish(p);
      const t1 = await store().now();
      const all = await s.readSince(0);
      expect(all.map((e) => e.offset)).toEqual([1, 2, 3]);
      expect(all.map((e) => e.payload)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      for (const e of all) {
        for (const k of ['offset', 'stream', 'key', 'payload', 'createdAt']) expect(e).toHaveProperty(k);
        expect(e.stream).toBe(s.name);
        expect(e.key).toBeNull();
        expect(e.createdAt).toBeGreaterThanOrEqual(t0);
        expect(e.createdAt).toBeLessThanOrEqual(t1);
      }
      expect((await s.readSince(1)).map((e) => e.offset)).toEqual([2, 3]);
      expect(await s.readSince(3)).toEqual([]);
      expect(await s.readSince(100)).toEqual([]);
      expect(await env.other.stream(s.name).readSince(0)).toEqual(all);
    });

    it('readSince honours limit', async () => {
      const s = store().stream(uid('s-limit'));
      for (let i = 0; i < 5; i++) await s.publish(i);
      expect((await s.readSince(0, 2)).map((e) => e.offset)).toEqual([1, 2]);
      expect((await s.readSince(2, 2)).map((e) => e.offset)).toEqual([3, 4]);
      expect((await s.readSince(4, 2)).map((e) => e.offset)).toEqual([5]);
    });

    it('keeps global FIFO across keyed and unkeyed events and round-trips the key (null vs string)', async () => {
      const s = store().stream(uid('s-keys'));
      await s.publish('a');
      await s.publishWithKey('k1', 'b');
      await s.publish('c');
      await s.publishWithKey('k2', 'd');
      await s.publishWithKey('k1', 'e');
      await s.publishWithKey('names with spaces 名前', 'f');
      const events = await s.readSince(0);
      expect(events.map((e) => [e.offset, e.key, e.payload])).toEqual([
        [1, null, 'a'],
        [2, 'k1', 'b'],
        [3, null, 'c'],
        [4, 'k2', 'd'],
        [5, 'k1', 'e'],
        [6, 'names with spaces 名前', 'f'],
      ]);
      expect(events.filter((e) => e.key === 'k1').map((e) => e.payload)).toEqual(['b', 'e']);
      // The subscriber's view is the same sequence.
      const sub = s.subscribe(uid('c'));
      try {
        const seen: StreamEvent[] = [];
        for (let i = 0; i < events.length; i++) seen.push(await nextSoon(sub));
        expect(seen).toEqual(events);
      } finally {
        sub.close();
      }
    });

    it('refuses an empty key with InvalidName, writing nothing', async () => {
      const s = store().stream(uid('s-emptykey'));
      await expectError(() => s.publishWithKey('', 'x'), InvalidName);
      await expectError(() => s.publishWithKey('  ', 'x'), InvalidName);
      expect(await s.readSince(0)).toEqual([]);
    });

    it('refuses a payload that does not survive JSON with Codec, writing nothing', async () => {
      const s = store().stream(uid('s-codec'));
      const cyclic: unknown[] = [];
      cyclic.push(cyclic);
      await expectError(() => s.publish(10n), Codec);
      await expectError(() => s.publish(cyclic), Codec);
      await expectError(() => s.publish(undefined), Codec);
      await expectError(() => s.publishWithKey('k', { x: Number.POSITIVE_INFINITY }), Codec);
      expect(await s.readSince(0)).toEqual([]);
      expect(await s.publish('first')).toBe(1);
    });

    it('round-trips JSON payloads exactly (conformance/contract/codec.json)', async () => {
      const s = store().stream(uid('s-json'));
      const { roundTrip } = loadVectors<CodecVectors>('codec.json');
      for (const r of roundTrip) await s.publish(r.value);
      expect((await s.readSince(0)).map((e) => e.payload)).toEqual(roundTrip.map((r) => r.value));
    });
  });

  describe('consumer offsets', () => {
    it('getOffset is 0 for an unknown consumer', async () => {
      expect(await store().stream(uid('s-off0')).getOffset('nobody')).toBe(0);
    });

    it('saveOffset is monotone: a lower or equal save is a no-op returning false', async () => {
      const s = store().stream(uid('s-mono'));
      expect(await s.saveOffset('c', 5)).toBe(true);
      expect(await s.saveOffset('c', 3)).toBe(false);
      expect(await s.getOffset('c')).toBe(5);
      expect(await s.saveOffset('c', 5)).toBe(false);
      expect(await s.saveOffset('c', 7)).toBe(true);
      expect(await env.other.stream(s.name).getOffset('c')).toBe(7);
      expect(await s.getOffset('d')).toBe(0);
      expect(await store().stream(uid('s-mono-other')).getOffset('c')).toBe(0);
    });

    it('readFromConsumer resumes after the saved offset', async () => {
      const s = store().stream(uid('s-rfc'));
      for (let i = 1; i <= 4; i++) await s.publish(i);
      expect((await s.readFromConsumer('c')).map((e) => e.offset)).toEqual([1, 2, 3, 4]);
      await s.saveOffset('c', 2);
      expect((await s.readFromConsumer('c')).map((e) => e.offset)).toEqual([3, 4]);
      expect((await s.readFromConsumer('c', 1)).map((e) => e.offset)).toEqual([3]);
    });

    it('refuses an empty consumer name with InvalidName', async () => {
      const s = store().stream(uid('s-consumer'));
      await expectError(() => s.saveOffset('', 1), InvalidName);
      await expectError(() => s.getOffset(' '), InvalidName);
    });
  });

  describe('subscribe', () => {
    it('replays from the saved offset, then follows live events', async () => {
      const s = store().stream(uid('s-sub'));
      for (let i = 1; i <= 4; i++) await s.publish(`e${i}`);
      await s.saveOffset('c', 2);
      const sub = s.subscribe('c');
      try {
        expect(sub.stream).toBe(s.name);
        expect(sub.consumer).toBe('c');
        expect((await nextSoon(sub)).offset).toBe(3);
        expect((await nextSoon(sub)).offset).toBe(4);
        const pending = sub.next(AbortSignal.timeout(10_000));
        await pause(20);
        expect(await s.publish('live')).toBe(5);
        const live = await pending;
        expect(live).toMatchObject({ offset: 5, payload: 'live' });
        // Published through another store (another process's view).
        await env.other.stream(s.name).publishWithKey('k', 'from other');
        expect(await nextSoon(sub)).toMatchObject({ offset: 6, key: 'k', payload: 'from other' });
        // Reading never saves: offsets are explicit.
        expect(await s.getOffset('c')).toBe(2);
        expect(await sub.saveOffset(6)).toBe(true);
        expect(await s.getOffset('c')).toBe(6);
        expect(await sub.saveOffset(4)).toBe(false);
      } finally {
        sub.close();
      }
    });

    it('consumers are independent: each replays from its own offset', async () => {
      const s = store().stream(uid('s-consumers'));
      for (let i = 1; i <= 3; i++) await s.publish(i);
      await s.saveOffset('ahead', 2);
      const behind = s.subscribe('behind');
      const ahead = env.other.stream(s.name).subscribe('ahead');
      try {
        expect([
          (await nextSoon(behind)).offset,
          (await nextSoon(behind)).offset,
          (await nextSoon(behind)).offset,
        ]).toEqual([1, 2, 3]);
        expect((await nextSoon(ahead)).offset).toBe(3);
        await s.publish(4);
        expect((await nextSoon(behind)).offset).toBe(4);
        expect((await nextSoon(ahead)).offset).toBe(4);
        expect(await s.getOffset('behind')).toBe(0);
        expect(await s.getOffset('ahead')).toBe(2);
      } finally {
        behind.close();
        ahead.close();
      }
    });

    it('a subscriber on another store follows publishes live', async () => {
      const name = uid('s-cross');
      const sub = env.other.stream(name).subscribe('c');
      try {
        const pending = sub.next(AbortSignal.timeout(10_000));
        await pause(20);
        await store().stream(name).publish('hello');
        expect(await pending).toMatchObject({ offset: 1, payload: 'hello' });
      } finally {
        sub.close();
      }
    });

    it('a subscriber never skips an event that commits late (events arrive in offset order with no gap)', async () => {
      const name = uid('s-late');
      const sub = env.other.stream(name).subscribe('c');
      const { events, done } = collect(sub);
      try {
        const txA = await openTx(store());
        const nA = await txA.publish(name, 'A');
        // B publishes after A took its offset; whatever the engine does, B must not become visible ahead of A.
        const b = (async () => {
          const txB = await openTx(env.other);
          const nB = await txB.publish(name, 'B');
          await txB.commit();
          return nB;
        })();
        await pause(100);
        await txA.commit();
        const nB = await within('transaction B', 15_000, b);
        expect(nB).toBe(nA + 1);
        await waitFor('both events at the subscriber', () => events.length >= 2);
        expect(events.map((e) => [e.offset, e.payload])).toEqual([
          [nA, 'A'],
          [nB, 'B'],
        ]);
      } finally {
        sub.close();
        await done;
      }
    });

    it('concurrent transactional publishers never let a subscriber skip an offset', async () => {
      const name = uid('s-many');
      const writers = 4;
      const perWriter = 15;
      const sub = store().stream(name).subscribe('c');
      const { events, done } = collect(sub);
      try {
        await Promise.all(
          Array.from({ length: writers }, async (_, w) => {
            const st = w % 2 === 0 ? store() : env.other;
            for (let i = 0; i < perWriter; i++) {
              await st.withTx(async (tx) => {
                await tx.publish(name, { w, i });
                if (i % 3 === 0) await pause(Math.floor(Math.random() * 5));
              });
            }
          }),
        );
        const total = writers * perWriter;
        await waitFor(`${total} events at the subscriber`, () => events.length >= total, 20_000);
        expect(events.map((e) => e.offset)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
        // Per writer, its own events are in its order.
        for (let w = 0; w < writers; w++) {
          expect(
            events.filter((e) => (e.payload as { w: number }).w === w).map((e) => (e.payload as { i: number }).i),
          ).toEqual(Array.from({ length: perWriter }, (_, i) => i));
        }
      } finally {
        sub.close();
        await done;
      }
    });

    it('closing a subscription ends its async iteration and resolves a pending next with null', async () => {
      const s = store().stream(uid('s-close'));
      const sub = s.subscribe('c');
      const pending = sub.next();
      await pause(20);
      sub.close();
      expect(await within('pending next after close', 5_000, pending)).toBeNull();
      expect(sub.closed).toBe(true);
      const { done } = collect(sub);
      await within('iteration after close', 5_000, done);
    });

    it('next(signal) resolves null when the signal aborts', async () => {
      const sub = store().stream(uid('s-abort')).subscribe('c');
      try {
        expect(await sub.next(AbortSignal.timeout(100))).toBeNull();
        expect(sub.closed).toBe(false);
      } finally {
        sub.close();
      }
    });
  });

  describe('trimTo', () => {
    it('deletes offsets <= horizon, keeps survivor offsets, and never renumbers', async () => {
      const s = store().stream(uid('s-trim'));
      for (let i = 1; i <= 10; i++) await s.publish(i);
      await s.saveOffset('behind', 3);
      expect(await s.trimTo(5)).toBe(5);
      expect((await s.readSince(0)).map((e) => [e.offset, e.payload])).toEqual([
        [6, 6],
        [7, 7],
        [8, 8],
        [9, 9],
        [10, 10],
      ]);
      expect((await s.readSince(2, 2)).map((e) => e.offset)).toEqual([6, 7]);
      expect((await s.readSince(5)).map((e) => e.offset)).toEqual([6, 7, 8, 9, 10]);
      expect(await s.trimTo(5)).toBe(0);
      expect(await s.trimTo(0)).toBe(0);
      // A saved offset below the horizon stays a valid position.
      expect(await s.getOffset('behind')).toBe(3);
      expect((await s.readFromConsumer('behind')).map((e) => e.offset)).toEqual([6, 7, 8, 9, 10]);
      const sub = s.subscribe('behind');
      try {
        expect((await nextSoon(sub)).offset).toBe(6);
      } finally {
        sub.close();
      }
      expect(await s.publish(11)).toBe(11);
      expect(await s.trimTo(100)).toBe(6);
      expect(await s.readSince(0)).toEqual([]);
      expect(await s.publish(12)).toBe(12);
    });

    it('trims only its own stream', async () => {
      const a = store().stream(uid('s-trim-a'));
      const b = store().stream(uid('s-trim-b'));
      for (let i = 0; i < 3; i++) {
        await a.publish(i);
        await b.publish(i);
      }
      expect(await a.trimTo(3)).toBe(3);
      expect((await b.readSince(0)).map((e) => e.offset)).toEqual([1, 2, 3]);
    });

    it('a subscriber keeps its place across a concurrent trim', async () => {
      const s = store().stream(uid('s-trim-sub'));
      for (let i = 1; i <= 6; i++) await s.publish(i);
      const sub = s.subscribe('c');
      try {
        const before: number[] = [];
        for (let i = 0; i < 3; i++) before.push((await nextSoon(sub)).offset);
        expect(before).toEqual([1, 2, 3]);
        expect(await env.other.stream(s.name).trimTo(5)).toBe(5);
        await s.publish(7);
        const after: number[] = [];
        while (!after.includes(7)) after.push((await nextSoon(sub)).offset);
        // Whatever it had buffered, it moves strictly forward and reaches every surviving event.
        expect(after.every((o, i) => o > 3 && (i === 0 || o > after[i - 1]!))).toBe(true);
        expect(after).toContain(6);
        expect(after.at(-1)).toBe(7);
      } finally {
        sub.close();
      }
    });
  });
}
