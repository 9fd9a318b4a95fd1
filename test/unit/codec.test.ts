import { describe, expect, it } from '@jest/globals';
import { decodePayload, encodePayload } from '../../lib/contract/codec.js';
import { Codec } from '../../lib/contract/errors.js';
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

  it('encodes objects with toJSON (Date) as JSON does', () => {
    const d = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
    expect(encodePayload({ d })).toBe('{"d":"2026-01-02T03:04:05.006Z"}');
  });

  it('refuses stored text that is not JSON with Codec', () => {
    expect(() => decodePayload('{not json')).toThrow(Codec);
    expect(() => decodePayload('')).toThrow(Codec);
  });
});
