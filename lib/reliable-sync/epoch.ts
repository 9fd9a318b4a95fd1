import { Codec } from '../contract/errors.js';

/** One retained frame: its epoch and its bytes. */
export interface OutboxRecord {
  readonly epoch: number;
  readonly frame: Uint8Array;
}

/** Throws a RangeError unless `value` is a non-negative safe integer. */
export function assertEpoch(value: unknown, what = 'epoch'): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${what} must be a non-negative safe integer, got ${describe(value)}`);
  }
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

function describe(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}
