import { Codec } from './errors.js';

/** A JSON value as stored and returned by queues, streams and outboxes. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Encodes a payload as JSON text, refusing values that would not survive the
 * round trip (SPEC §2) with {@link Codec}: BigInt, cycles, non-finite
 * numbers, functions and symbols, and `undefined` at the top. Nested
 * `undefined` object properties are dropped, as JSON does.
 */
export function encodePayload(value: unknown, what = 'payload'): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new Codec(what, `the number ${v} does not survive JSON`);
      if (typeof v === 'function' || typeof v === 'symbol') throw new Codec(what, `a ${typeof v} does not survive JSON`);
      return v;
    });
  } catch (err) {
    if (err instanceof Codec) throw err;
    throw new Codec(what, `does not survive JSON (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
  if (text === undefined) throw new Codec(what, `${value === undefined ? 'undefined' : typeof value} at the top does not survive JSON`);
  return text;
}

/** Decodes stored JSON text; a corrupt value is a {@link Codec} error. */
export function decodePayload(text: string, what = 'stored payload'): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Codec(what, 'is not valid JSON', { cause: err });
  }
}

/** Byte length of a string in UTF-8. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
