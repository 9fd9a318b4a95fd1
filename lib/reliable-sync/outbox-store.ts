import type { OutboxRecord } from './epoch.js';

/**
 * Ordered byte storage under one reliable-sync outbox (seed 000). A store
 * owns persistence only; {@link ReliableOutbox} owns the protocol.
 *
 * Every method validates its epoch (a non-negative safe integer, otherwise
 * `InvalidArgument`, a `RangeError` with code `INVALID_ARGUMENT`) before
 * touching storage.
 */
export interface OutboxStore {
  /** Stores `frame` under `epoch`, replacing a frame already stored there. */
  put(epoch: number, frame: Uint8Array): Promise<void>;
  /** Removes every frame whose epoch is at or below `epoch`. */
  deleteThrough(epoch: number): Promise<void>;
  /** Every stored frame whose epoch is above `epoch`, in ascending epoch order. */
  scanAfter(epoch: number): Promise<OutboxRecord[]>;
  /** The stored acknowledgment cursor (0 when none was ever saved). */
  loadCursor(): Promise<number>;
  /**
   * Stores `max(stored cursor, epoch)`, atomically in the store itself, so a
   * stale handle writing a lower value later can never lower the cursor.
   */
  saveCursor(epoch: number): Promise<void>;
}
