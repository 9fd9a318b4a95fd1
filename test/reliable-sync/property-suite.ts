import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ReliableOutbox, type OutboxStore } from '../../lib/reliable-sync/index.js';
import { show } from './fixtures.js';

type Closable = OutboxStore & { close?(): Promise<void> };

/** Opens handles on one persistent outbox; each property run gets a fresh key, so runs never see each other. */
export interface PropertyKind {
  name: string;
  open(key: string): Promise<Closable>;
}

let runs = 0;
const nextKey = (): string => `run-${process.pid}-${++runs}`;
const closeAll = async (stores: Closable[]): Promise<void> => {
  for (const s of stores) await s.close?.();
};
const frameOf = (epoch: number, salt = 0): Uint8Array => new Uint8Array(Buffer.from(`${epoch}:${salt}`));

/** The protocol properties, run against one kind of store. */
export function outboxProperties(kind: PropertyKind, numRuns = 100, block: typeof describe = describe): void {
  block(`reliable outbox properties on the ${kind.name} store`, () => {
    it('the cursor is monotone and equals the largest ack under any interleaving of acks from stale handles', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.nat(2), fc.nat(60)), { minLength: 1, maxLength: 25 }), async (acks) => {
          const key = nextKey();
          const stores = [await kind.open(key), await kind.open(key), await kind.open(key)];
          // Every handle opens at cursor 0 and never refreshes on its own: all but one are stale.
          const outboxes = await Promise.all(stores.map((s) => ReliableOutbox.open(s)));
          let largest = 0;
          let previous = 0;
          for (const [h, epoch] of acks) {
            largest = Math.max(largest, epoch);
            const cursor = await outboxes[h].ackThrough(epoch);
            expect(cursor).toBe(largest);
            expect(cursor).toBeGreaterThanOrEqual(previous);
            previous = cursor;
          }
          await closeAll(stores);
          const again = await kind.open(key);
          expect((await ReliableOutbox.open(again)).cursor).toBe(largest);
          await again.close?.();
        }),
        { numRuns },
      );
    });

    it('replay never contains an epoch at or below the cursor, and is strictly ascending', async () => {
      const op = fc.oneof(
        fc.record({ kind: fc.constant('append' as const), h: fc.nat(1), epoch: fc.integer({ min: 1, max: 40 }) }),
        fc.record({ kind: fc.constant('ack' as const), h: fc.nat(1), epoch: fc.nat(40) }),
        fc.record({ kind: fc.constant('replay' as const), h: fc.nat(1), epoch: fc.nat(40) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
          const key = nextKey();
          const stores = [await kind.open(key), await kind.open(key)];
          const outboxes = await Promise.all(stores.map((s) => ReliableOutbox.open(s)));
          let acked = 0;
          for (const o of ops) {
            const outbox = outboxes[o.h];
            if (o.kind === 'append') {
              await outbox.append(o.epoch, frameOf(o.epoch)).catch((err: unknown) => {
                if (!(err instanceof RangeError)) throw err;
              });
            } else if (o.kind === 'ack') {
              acked = Math.max(acked, o.epoch);
              await outbox.ackThrough(o.epoch);
            } else {
              const epochs = (await outbox.replayFrom(o.epoch)).map((r) => r.epoch);
              for (const e of epochs) {
                expect(e).toBeGreaterThan(acked);
                expect(e).toBeGreaterThan(outbox.cursor);
                expect(e).toBeGreaterThan(o.epoch);
              }
              expect(epochs).toEqual([...new Set(epochs)].sort((a, b) => a - b));
            }
          }
          await closeAll(stores);
        }),
        { numRuns },
      );
    });

    it('every appended, unacknowledged frame replays after a restart, with its bytes', async () => {
      const op = fc.oneof(
        {
          weight: 3,
          arbitrary: fc.record({
            kind: fc.constant('append' as const),
            epoch: fc.integer({ min: 1, max: 60 }),
            salt: fc.nat(9),
          }),
        },
        {
          weight: 1,
          arbitrary: fc.record({ kind: fc.constant('ack' as const), epoch: fc.nat(60), salt: fc.constant(0) }),
        },
      );
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 30 }), async (ops) => {
          const key = nextKey();
          const store = await kind.open(key);
          const outbox = await ReliableOutbox.open(store);
          const model = new Map<number, Uint8Array>();
          let cursor = 0;
          for (const o of ops) {
            if (o.kind === 'ack') {
              cursor = Math.max(cursor, o.epoch);
              await outbox.ackThrough(o.epoch);
              for (const e of model.keys()) if (e <= cursor) model.delete(e);
              continue;
            }
            const frame = frameOf(o.epoch, o.salt);
            const existing = model.get(o.epoch);
            if (o.epoch <= cursor || (existing && Buffer.compare(existing, frame) !== 0)) {
              await expect(outbox.append(o.epoch, frame)).rejects.toThrow(RangeError);
            } else {
              await outbox.append(o.epoch, frame);
              model.set(o.epoch, frame);
            }
          }
          await store.close?.();
          const again = await kind.open(key);
          const reopened = await ReliableOutbox.open(again);
          const expected = [...model.entries()].sort((a, b) => a[0] - b[0]).map(([epoch, frame]) => ({ epoch, frame }));
          expect(reopened.cursor).toBe(cursor);
          expect(show(await reopened.replayFrom())).toEqual(show(expected));
          expect(reopened.retainedEpochs()).toEqual(expected.map((r) => r.epoch));
          await again.close?.();
        }),
        { numRuns },
      );
    });
  });
}
