import { assertEpoch, assertFrame, copyFrame, type OutboxRecord } from './epoch.js';
import type { OutboxStore } from './outbox-store.js';

/**
 * An {@link OutboxStore} in process memory: for tests, and for peers whose
 * outbox need not survive a restart. Several {@link ReliableOutbox} handles
 * may share one instance; it keeps the maximum cursor like the durable stores.
 */
export class InMemoryOutboxStore implements OutboxStore {
  private readonly frames = new Map<number, Uint8Array>();
  private cursor = 0;

  async put(epoch: number, frame: Uint8Array): Promise<void> {
    assertEpoch(epoch);
    assertFrame(frame, epoch);
    this.frames.set(epoch, copyFrame(frame));
  }

  async deleteThrough(epoch: number): Promise<void> {
    assertEpoch(epoch);
    for (const e of this.frames.keys()) if (e <= epoch) this.frames.delete(e);
  }

  async scanAfter(epoch: number): Promise<OutboxRecord[]> {
    assertEpoch(epoch);
    return [...this.frames.entries()]
      .filter(([e]) => e > epoch)
      .sort((a, b) => a[0] - b[0])
      .map(([e, frame]) => ({ epoch: e, frame: copyFrame(frame) }));
  }

  async loadCursor(): Promise<number> {
    return this.cursor;
  }

  async saveCursor(epoch: number): Promise<void> {
    assertEpoch(epoch);
    this.cursor = Math.max(this.cursor, epoch);
  }
}
