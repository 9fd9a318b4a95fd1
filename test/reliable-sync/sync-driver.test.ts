import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Closed } from '../../lib/contract/errors.js';
import {
  InMemoryOutboxStore,
  ReliableOutbox,
  SqliteOutboxStore,
  SyncDriver,
  type SyncTransport,
} from '../../lib/reliable-sync/index.js';
import { waitFor } from '../helpers/engines.js';
import { expectInvalidArgument, refusal, thrown } from '../helpers/typed-errors.js';

const root = mkdtempSync(join(tmpdir(), 'alkstore-rsync-driver-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const text = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));

/** A transport that records what reached the wire. */
function recorder(): SyncTransport & { sent: { epoch: number; frame: string }[] } {
  const sent: { epoch: number; frame: string }[] = [];
  return {
    sent,
    async send(epoch, frame) {
      sent.push({ epoch, frame: Buffer.from(frame).toString() });
    },
  };
}

describe('SyncDriver', () => {
  it('keeps at most `window` frames sent and unacknowledged, sending lowest epoch first', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    for (const e of [3, 1, 5, 2, 4]) await outbox.append(e, text(`f${e}`));
    const wire = recorder();
    const driver = new SyncDriver(outbox, wire, { window: 2 });
    await driver.start();
    await waitFor('two sends', () => wire.sent.length >= 2);
    // Nothing more goes out until the peer acknowledges.
    await driver.append(6, text('f6'));
    expect(driver.inFlightEpochs()).toEqual([1, 2]);
    expect(wire.sent.map((s) => s.epoch)).toEqual([1, 2]);
    expect(await driver.onAck(2)).toBe(2);
    await waitFor('four sends', () => wire.sent.length >= 4);
    expect(driver.inFlightEpochs()).toEqual([3, 4]);
    await driver.onAck(4);
    await waitFor('six sends', () => wire.sent.length >= 6);
    await driver.onAck(6);
    await waitFor('nothing in flight', () => driver.inFlightEpochs().length === 0);
    await driver.stop();
    expect(wire.sent.map((s) => s.epoch)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(outbox.retainedEpochs()).toEqual([]);
  });

  it('sends in ascending order when frames are already pending at start', async () => {
    const store = new InMemoryOutboxStore();
    const outbox = await ReliableOutbox.open(store);
    for (const e of [4, 2, 3, 1]) await outbox.append(e, text(`f${e}`));
    const wire = recorder();
    const driver = new SyncDriver(outbox, wire, { window: 10 });
    await driver.start();
    await waitFor('four sends', () => wire.sent.length === 4);
    await driver.stop();
    expect(wire.sent.map((s) => s.epoch)).toEqual([1, 2, 3, 4]);
  });

  it('appends before sending: the store holds a frame before the transport sees it', async () => {
    const store = new InMemoryOutboxStore();
    const outbox = await ReliableOutbox.open(store);
    const seenInStore: boolean[] = [];
    const driver = new SyncDriver(outbox, {
      async send(epoch) {
        seenInStore.push((await store.scanAfter(epoch - 1)).some((r) => r.epoch === epoch));
      },
    });
    await driver.start();
    for (let e = 1; e <= 5; e += 1) await driver.append(e, text(`f${e}`));
    await waitFor('five sends', () => seenInStore.length === 5);
    await driver.stop();
    expect(seenInStore).toEqual([true, true, true, true, true]);
  });

  it('redelivers every unacknowledged frame after a restart', async () => {
    const path = join(root, 'restart.db');
    const store1 = await SqliteOutboxStore.open({ path, key: 'peer-1' });
    const wire1 = recorder();
    const driver1 = new SyncDriver(await ReliableOutbox.open(store1), wire1);
    await driver1.start();
    for (let e = 1; e <= 4; e += 1) await driver1.append(e, text(`f${e}`));
    await waitFor('four sends', () => wire1.sent.length === 4);
    await driver1.onAck(2);
    // The process dies: frames 3 and 4 were sent but never acknowledged.
    await driver1.stop();
    await store1.close();

    const store2 = await SqliteOutboxStore.open({ path, key: 'peer-1' });
    const wire2 = recorder();
    const driver2 = new SyncDriver(await ReliableOutbox.open(store2), wire2);
    await driver2.start();
    await waitFor('two redeliveries', () => wire2.sent.length === 2);
    expect(wire2.sent).toEqual([
      { epoch: 3, frame: 'f3' },
      { epoch: 4, frame: 'f4' },
    ]);
    await driver2.onAck(4);
    await driver2.stop();
    expect(await store2.scanAfter(0)).toEqual([]);
    await store2.close();
  });

  it('retries a failed send with backoff and reports each failure', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    const errors: [string, number][] = [];
    let attempts = 0;
    const delivered: number[] = [];
    const driver = new SyncDriver(
      outbox,
      {
        async send(epoch) {
          attempts += 1;
          if (attempts <= 2) throw new Error(`link down ${attempts}`);
          delivered.push(epoch);
        },
      },
      { retryDelayMs: 1, onSendError: (err, epoch) => errors.push([(err as Error).message, epoch]) },
    );
    await driver.start();
    await driver.append(7, text('f7'));
    await waitFor('delivery after retries', () => delivered.length === 1);
    await driver.stop();
    expect(delivered).toEqual([7]);
    expect(errors).toEqual([
      ['link down 1', 7],
      ['link down 2', 7],
    ]);
    expect(outbox.retainedEpochs()).toEqual([7]);
  });

  it('resend() sends every unacknowledged frame again', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    const wire = recorder();
    const driver = new SyncDriver(outbox, wire);
    await driver.start();
    for (let e = 1; e <= 3; e += 1) await driver.append(e, text(`f${e}`));
    await waitFor('three sends', () => wire.sent.length === 3);
    await driver.onAck(1);
    driver.resend();
    await waitFor('two resends', () => wire.sent.length === 5);
    await driver.stop();
    expect(wire.sent.slice(3).map((s) => s.epoch)).toEqual([2, 3]);
  });

  it('an ack that overtakes its send does not hold a window slot', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    let driver: SyncDriver | null = null;
    const sent: number[] = [];
    driver = new SyncDriver(
      outbox,
      {
        async send(epoch) {
          sent.push(epoch);
          // The peer acknowledges before send() returns.
          await driver!.onAck(epoch);
        },
      },
      { window: 1 },
    );
    await driver.start();
    for (let e = 1; e <= 3; e += 1) await driver.append(e, text(`f${e}`));
    await waitFor('three sends', () => sent.length === 3 && driver!.inFlightEpochs().length === 0);
    await driver.stop();
    expect(sent).toEqual([1, 2, 3]);
  });

  it('stop() aborts an in-flight send, resolves, and keeps the frame for the next start', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    let started = false;
    let sawAbort = false;
    const driver = new SyncDriver(outbox, {
      send(_epoch, _frame, signal) {
        started = true;
        return new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(new Error('aborted'));
          });
        });
      },
    });
    await driver.start();
    await driver.append(1, text('f1'));
    await waitFor('the send to start', () => started);
    await driver.stop();
    expect(sawAbort).toBe(true);
    expect(driver.stopped).toBe(true);
    expect(outbox.retainedEpochs()).toEqual([1]);
    await expect(driver.start()).rejects.toThrow(Closed);
  });

  it('an external AbortSignal stops the driver', async () => {
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    const controller = new AbortController();
    const wire = recorder();
    const driver = new SyncDriver(outbox, wire, { signal: controller.signal });
    await driver.start();
    controller.abort();
    await driver.stop();
    expect(driver.stopped).toBe(true);
  });

  it('rejects a window that is not a positive integer', () => {
    const outbox = new InMemoryOutboxStore();
    return ReliableOutbox.open(outbox).then((o) => {
      expect(() => new SyncDriver(o, recorder(), { window: 0 })).toThrow(RangeError);
      expect(() => new SyncDriver(o, recorder(), { window: 1.5 })).toThrow(RangeError);
    });
  });

  it('refuses an outbox that is not a ReliableOutbox, and a transport without send, with an InvalidArgument naming it', async () => {
    expectInvalidArgument(
      thrown(() => new SyncDriver(null as never, recorder())),
      'outbox.append',
      ['function'],
    );
    expectInvalidArgument(
      thrown(() => new SyncDriver(new InMemoryOutboxStore() as never, recorder())),
      'outbox.append',
      ['function'],
    );
    const outbox = await ReliableOutbox.open(new InMemoryOutboxStore());
    expectInvalidArgument(
      thrown(() => new SyncDriver(outbox, {} as never)),
      'transport.send',
      ['function'],
    );
  });

  it('append and onAck pass the outbox refusals through, sending nothing', async () => {
    const store = new InMemoryOutboxStore();
    const outbox = await ReliableOutbox.open(store);
    const wire = recorder();
    const driver = new SyncDriver(outbox, wire);
    await driver.start();
    try {
      expectInvalidArgument(await refusal(() => driver.append(0, text('f0'))), 'epoch', ['acknowledgment cursor 0']);
      expectInvalidArgument(await refusal(() => driver.onAck(-1)), 'epoch');
      expect(await store.scanAfter(0)).toEqual([]);
      expect(wire.sent).toEqual([]);
    } finally {
      await driver.stop();
    }
  });
});
