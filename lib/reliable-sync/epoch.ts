import { Codec } from '../contract/errors.js';
import { requireOffset } from '../contract/validate.js';
/** One retained frame: its epoch and its bytes. */
export interface OutboxRecord {
  readonly epoch: number;
  readonly frame: Uint8Array;
}

/** Throws `InvalidArgument` (a RangeError) unless `value` is a non-negative safe integer. */
export function assertEpoch(value: unknown, what = 'epoch'): asserts value is number {
  requireOffset(what, value);
}

/** Throws a {@link Codec} error unless `value` is a Uint8Array (a Buffer is one). */
export function assertFrame(value: unknown, epoch: number): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) {
    throw new Codec(`frame of epoch ${epoch}`, `must be a Uint8Array, got ${value === null ? 'null' : typeof value}`);
  }
}

/** A private copy, so a caller mutating its buffer later cannot change what was stored. */
export function copyFrame(frame: Uint8Array): Uint8Array {
  return new Uint8Array(frame);
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i += 1) if (a[i] !== b[i]) return false;
  return true;
}
