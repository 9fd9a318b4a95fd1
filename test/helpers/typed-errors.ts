import { expect } from '@jest/globals';
import { AlkstoreError, InvalidArgument, InvalidOption } from '../../lib/contract/errors.js';

/** What `fn` threw (synchronously) or its promise rejected with; fails when it did neither. */
export async function refusal(fn: () => unknown): Promise<unknown> {
  let result: unknown;
  try {
    result = fn();
  } catch (err) {
    return err;
  }
  try {
    await result;
  } catch (err) {
    return err;
  }
  throw new Error('expected a refusal, but the call succeeded');
}

/** What `fn` threw synchronously; fails when it returned. */
export function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw, but the call returned');
}

/**
 * Asserts an {@link InvalidArgument}: still a `RangeError` (so older `instanceof RangeError`
 * callers keep working) and an `AlkstoreError`, code `INVALID_ARGUMENT`, naming `argument`
 * first in its message, with every word in `words`.
 */
export function expectInvalidArgument(err: unknown, argument: string, words: string[] = []): InvalidArgument {
  expect(err).toBeInstanceOf(InvalidArgument);
  expect(err).toBeInstanceOf(RangeError);
  expect(err).toBeInstanceOf(AlkstoreError);
  const e = err as InvalidArgument;
  expect(e.code).toBe('INVALID_ARGUMENT');
  expect(e.name).toBe('InvalidArgument');
  expect(e.argument).toBe(argument);
  expect(e.message.startsWith(`${argument} `)).toBe(true);
  for (const w of words) expect(e.message).toContain(w);
  return e;
}

/** Asserts an {@link InvalidOption} with code `INVALID_OPTION` naming `field`, with every word in `words`. */
export function expectInvalidOption(err: unknown, field: string, words: string[] = []): InvalidOption {
  expect(err).toBeInstanceOf(InvalidOption);
  const e = err as InvalidOption;
  expect(e.code).toBe('INVALID_OPTION');
  expect(e.field).toBe(field);
  for (const w of words) expect(e.message).toContain(w);
  return e;
}
