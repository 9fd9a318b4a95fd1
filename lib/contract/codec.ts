import { Codec } from './errors.js';

/** A JSON value as stored and returned by queues, streams and outboxes. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Deepest nesting of arrays and objects a payload may have (the top-level value is depth 1).
 * Far beyond any message, and far below where a recursive encoder or validator (JSON.stringify,
 * class-transformer, PostgreSQL's json parser) runs out of stack, so the limit is the same
 * everywhere instead of depending on the caller's stack.
 */
export const MAX_PAYLOAD_DEPTH = 256;

/**
 * Encodes a payload as JSON text, refusing values that would not survive the
 * round trip (SPEC §2) with {@link Codec}: BigInt, cycles, non-finite
 * numbers, functions and symbols, `undefined` at the top, and nesting deeper
 * than {@link MAX_PAYLOAD_DEPTH}. Nested `undefined` object properties are
 * dropped, as JSON does.
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
    // Only a value nested far deeper than the limit overflows the stack here (a cycle is a TypeError).
    if (err instanceof RangeError && /call stack/i.test(err.message)) throw tooDeep(what, { cause: err });
    throw new Codec(what, `does not survive JSON (${err instanceof Error ? err.message : String(err)})`, { cause: err });
  }
  if (text === undefined) throw new Codec(what, `${value === undefined ? 'undefined' : typeof value} at the top does not survive JSON`);
  if (nestingOf(text) > MAX_PAYLOAD_DEPTH) throw tooDeep(what);
  return text;
}

function tooDeep(what: string, options?: { cause?: unknown }): Codec {
  return new Codec(what, `is nested more than ${MAX_PAYLOAD_DEPTH} levels deep (arrays and objects); flatten it`, options);
}

const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Deepest nesting in JSON text, skipping strings. Text too short to be that deep is not scanned. */
function nestingOf(text: string): number {
  if (text.length <= 2 * MAX_PAYLOAD_DEPTH) return 0;
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      if (++depth > max) max = depth;
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      depth--;
    }
  }
  return max;
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
