import { describe, expect, it } from '@jest/globals';
import { DEFAULT_MAX_PAYLOAD_BYTES, decodePayload, encodePayload } from '../../lib/contract/codec.js';
import { Codec, PayloadTooLarge } from '../../lib/contract/errors.js';
import { type CodecVectors, loadVectors } from './vectors.js';

const v = loadVectors<CodecVectors>('codec.json');

function codecError(value: unknown): Codec {
  let caught: unknown;
  try {
    encodePayload(value, 'job payload');
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(Codec);
  expect((caught as Codec).code).toBe('CODEC');
  expect((caught as Codec).message).toContain('job payload');
  return caught as Codec;
}

describe('payload codec (conformance/contract/codec.json)', () => {
  it.each(v.roundTrip.map((r) => [r.text, r] as const))('encodes and decodes %s exactly', (_text, r) => {
    expect(encodePayload(r.value)).toBe(r.text);
    expect(decodePayload(r.text)).toEqual(r.value);
  });

  it('refuses a BigInt, at the top or nested', () => {
    codecError(1n);
    codecError({ a: [1, 2n] });
  });

  it('refuses a cycle', () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    codecError(a);
    const list: unknown[] = [];
    list.push({ list });
    codecError(list);
  });

  it('refuses non-finite numbers, at the top or nested', () => {
    codecError(Number.NaN);
    codecError(Number.POSITIVE_INFINITY);
    codecError({ n: Number.NEGATIVE_INFINITY });
    codecError([Number.NaN]);
  });

  it('refuses undefined, functions and symbols at the top', () => {
    codecError(undefined);
    codecError(() => 1);
    codecError(Symbol('s'));
  });

  it('refuses nested functions and symbols instead of dropping them silently', () => {
    codecError({ f: () => 1 });
    codecError({ s: Symbol('s') });
  });

  it('drops nested undefined object properties, as JSON does', () => {
    expect(encodePayload({ a: 1, b: undefined, c: { d: undefined } })).toBe('{"a":1,"c":{}}');
  });

  it.each([
    ['a Date', { at: new Date(0) }, 'job payload.at', 'toISOString'],
    ['a Map', { tags: new Map([['a', 1]]) }, 'job payload.tags', 'Object.fromEntries'],
    ['a Set', { ids: [1, new Set([1])] }, 'job payload.ids[1]', '[...set]'],
    ['a Buffer', { file: Buffer.from('hi') }, 'job payload.file', 'base64'],
    ['a typed array', { bytes: new Uint8Array([1, 2]) }, 'job payload.bytes', 'base64'],
    [
      'a class instance',
      {
        'user data': new (class Account {
          id = 1;
        })(),
      },
      'job payload["user data"]',
      'instance of Account',
    ],
    ['undefined in an array', [1, undefined], 'job payload[1]', 'null'],
  ])('refuses %s, naming the path of the value and what to send', (_kind, value, path, hint) => {
    const err = codecError(value);
    expect(err.message.startsWith(`${path}: `)).toBe(true);
    expect(err.message).toContain(hint);
  });

  it('refuses a Date at the top, naming the payload itself', () => {
    expect(codecError(new Date(0)).message.startsWith('job payload: a Date')).toBe(true);
  });

  it('accepts objects without a prototype and -0 (which comes back as 0)', () => {
    const bare = Object.assign(Object.create(null) as Record<string, unknown>, { a: 1 });
    expect(encodePayload(bare)).toBe('{"a":1}');
    expect(encodePayload({ n: -0 })).toBe('{"n":0}');
  });

  it('refuses a payload over the byte limit with PayloadTooLarge, counting UTF-8 bytes', () => {
    expect(encodePayload('x'.repeat(8), 'payload', 10)).toBe(`"${'x'.repeat(8)}"`);
    expect(() => encodePayload('é'.repeat(5), 'payload', 10)).toThrow(PayloadTooLarge); // 12 bytes of JSON
    expect(() => encodePayload('x'.repeat(9), 'payload', 10)).toThrow(
      /payload is 11 bytes as JSON; the limit is 10 \(the maxPayloadBytes store option\)/,
    );
  });

  it('a payload whose strings alone are over the limit is refused before it is encoded', () => {
    const err = (() => {
      try {
        encodePayload({ blob: 'x'.repeat(2_000) }, 'payload', 1_000);
      } catch (e) {
        return e as PayloadTooLarge;
      }
      throw new Error('accepted');
    })();
    expect(err).toBeInstanceOf(PayloadTooLarge);
    expect(err.message).toBe(
      'payload is more than 1000 bytes as JSON (its strings alone are at least 2004); the limit is 1000 (the maxPayloadBytes store option)',
    );
    expect(err.limit).toBe(1_000);
  });

  it('the default limit is 1 MiB', () => {
    expect(DEFAULT_MAX_PAYLOAD_BYTES).toBe(1024 * 1024);
    expect(() => encodePayload('x'.repeat(1024 * 1024 - 2))).not.toThrow();
    expect(() => encodePayload('x'.repeat(1024 * 1024 - 1))).toThrow(PayloadTooLarge);
  });

  it('refuses stored text that is not JSON with Codec', () => {
    expect(() => decodePayload('{not json')).toThrow(Codec);
    expect(() => decodePayload('')).toThrow(Codec);
  });
});
