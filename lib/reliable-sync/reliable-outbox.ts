import { InvalidArgument } from '../contract/errors.js';
import { requireFunction, requireInt } from '../contract/validate.js';
import { assertEpoch, assertFrame, copyFrame, sameBytes, type OutboxRecord } from './epoch.js';
import type { OutboxStore } from './outbox-store.js';
import { Serial } from './serial.js';

/**
 * The reliable-sync protocol over an {@link OutboxStore} (seed 000). It owns
 * the invariants:
 *
 * 1. append before send: {@link append} resolves only once the store holds the frame;
 * 2. retain every frame until the peer acknowledges its epoch;
 * 3. the acknowledgment cursor is monotone, even when a stale handle writes
 *    a lower cursor after a newer handle (the store keeps the maximum);
 * 4. prune only epochs at or below the cursor;
 * 5. replay epochs above the cursor in ascending order after a restart.
 *
 * Calls on one instance run one at a time in call order. Open it with
 * {@link ReliableOutbox.open}.
 */
export class ReliableOutbox<S extends OutboxStore = OutboxStore> {
  private readonly serial = new Serial();
  /** This handle's view of the retained frames. */
  private readonly retained = new Map<number, Uint8Array>();
  /** The keys of `retained`, ascending: pruning removes a prefix, sending reads one. */
  private readonly order: number[] = [];
  private current: number;

  private constructor(
    /** The store this outbox persists through (close it yourself when done). */
    readonly store: S,
    cursor: number,
    frames: OutboxRecord[],
  ) {
    this.current = cursor;
    for (const r of frames) if (r.epoch > cursor) this.retain(r.epoch, r.frame);
  }

  /**
   * Loads the stored cursor and the retained frames above it.
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`, as a rejection) naming the missing method
   *   (`store.put`, `store.scanAfter`, …) when `store` is not an {@link OutboxStore}, or `stored cursor` when the
   *   store holds a cursor that is not an epoch.
   */
  static async open<S extends OutboxStore>(store: S): Promise<ReliableOutbox<S>> {
    const methods = ['put', 'deleteThrough', 'scanAfter', 'loadCursor', 'saveCursor'] as const;
    for (const m of methods) requireFunction(`store.${m}`, (store as Partial<OutboxStore> | null)?.[m]);
    const cursor = await store.loadCursor();
    assertEpoch(cursor, 'stored cursor');
    const frames = await store.scanAfter(cursor);
    return new ReliableOutbox(store, cursor, frames);
  }

  /** The acknowledgment cursor as last read from (or written to) the store: every epoch at or below it is acknowledged. */
  get cursor(): number {
    return this.current;
  }

  /**
   * Persists `frame` under `epoch`; send it only after this resolves.
   *
   * - `epoch` at or below the cursor: `InvalidArgument` naming `epoch` (the
   *   peer already acknowledged that epoch; a silent no-op would hide a sequencing bug).
   * - `epoch` already retained by this handle with the same bytes: an
   *   idempotent no-op, resolving `false` (a retry after an uncertain failure is safe).
   * - `epoch` already retained with different bytes: `InvalidArgument` naming
   *   `epoch` (an epoch names exactly one frame; the peer may already hold the first one).
   *
   * Epochs need not be appended in order; replay is always ascending.
   * Resolves `true` when the frame was written; a refused append writes nothing.
   *
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`, as a rejection) naming `epoch`: not a
   *   non-negative safe integer, at or below the cursor, or already appended with other bytes.
   * @throws Codec when `frame` is not a `Uint8Array`.
   */
  async append(epoch: number, frame: Uint8Array): Promise<boolean> {
    assertEpoch(epoch);
    assertFrame(frame, epoch);
    const bytes = copyFrame(frame);
    return this.serial.run(async () => {
      if (epoch <= this.current) {
        throw new InvalidArgument(
          'epoch',
          `${epoch} is at or below the acknowledgment cursor ${this.current}; append epochs above it`,
        );
      }
      const existing = this.retained.get(epoch);
      if (existing) {
        if (sameBytes(existing, bytes)) return false;
        throw new InvalidArgument(
          'epoch',
          `${epoch} is already appended with different bytes; an epoch names one frame`,
        );
      }
      await this.store.put(epoch, bytes);
      this.retain(epoch, bytes);
      return true;
    });
  }

  /**
   * Records that the peer acknowledged every epoch through `epoch`. Saves the
   * cursor (the store keeps the maximum), reads the effective cursor back,
   * prunes every frame at or below it, and resolves that effective cursor,
   * which is never below the one before (an older or stale ack is harmless).
   */
  async ackThrough(epoch: number): Promise<number> {
    assertEpoch(epoch);
    return this.serial.run(async () => {
      await this.store.saveCursor(epoch);
      const stored = await this.store.loadCursor();
      assertEpoch(stored, 'stored cursor');
      this.advance(stored);
      await this.store.deleteThrough(this.current);
      return this.current;
    });
  }

  /**
   * The retained frames above `max(from, cursor)`, ascending, read from the
   * store (so frames another handle appended are included). Refreshes the
   * cursor from the store first, so the result never holds an acknowledged epoch.
   */
  async replayFrom(from = 0): Promise<OutboxRecord[]> {
    assertEpoch(from, 'replay start');
    return this.serial.run(async () => {
      const stored = await this.store.loadCursor();
      assertEpoch(stored, 'stored cursor');
      this.advance(stored);
      const floor = Math.max(from, this.current);
      const rows = (await this.store.scanAfter(floor)).filter((r) => r.epoch > floor);
      for (const r of rows) this.retain(r.epoch, r.frame);
      return rows;
    });
  }

  /** This handle's retained (unacknowledged) frames, ascending. Synchronous: no store round trip. */
  pending(): OutboxRecord[] {
    return this.firstPending(this.order.length);
  }

  /**
   * The lowest `count` of {@link pending}, ascending, without copying the rest.
   * @throws InvalidArgument naming `count` when it is not a non-negative safe integer.
   */
  firstPending(count: number): OutboxRecord[] {
    return this.order
      .slice(0, requireInt('count', count, 0, Number.MAX_SAFE_INTEGER))
      .map((epoch) => ({ epoch, frame: this.retained.get(epoch)! }));
  }

  /** The epochs of {@link pending}, ascending. */
  retainedEpochs(): number[] {
    return [...this.order];
  }

  private retain(epoch: number, frame: Uint8Array): void {
    if (!this.retained.has(epoch)) {
      let lo = 0;
      let hi = this.order.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.order[mid] < epoch) lo = mid + 1;
        else hi = mid;
      }
      this.order.splice(lo, 0, epoch);
    }
    this.retained.set(epoch, frame);
  }

  private advance(stored: number): void {
    if (stored > this.current) this.current = stored;
    let k = 0;
    while (k < this.order.length && this.order[k] <= this.current) {
      this.retained.delete(this.order[k]);
      k += 1;
    }
    if (k > 0) this.order.splice(0, k);
  }
}
