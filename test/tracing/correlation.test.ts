import { describe, expect, it } from '@jest/globals';
import {
  CORRELATION_ID_HEADER,
  correlationHeaders,
  currentCorrelationId,
  withCorrelationId,
} from '../../lib/tracing/correlation.js';
import { expectInvalidArgument, thrown } from '../helpers/typed-errors.js';

describe('correlation ids: bad input', () => {
  it.each([
    ['an empty string', ''],
    ['a blank string', ' \t\n'],
    ['a number', 42],
    ['null', null],
    ['undefined', undefined],
  ])('withCorrelationId refuses %s as correlationId with an InvalidArgument, without running fn', (_label, id) => {
    let ran = false;
    const e = expectInvalidArgument(
      thrown(() =>
        withCorrelationId(id as never, () => {
          ran = true;
        }),
      ),
      'correlationId',
      ['non-empty string'],
    );
    expect(ran).toBe(false);
    expect(e.message).not.toContain('42');
  });

  it('withCorrelationId refuses a blank or non-string causationId and a non-function fn', () => {
    let ran = false;
    const run = (): void => {
      ran = true;
    };
    expectInvalidArgument(
      thrown(() => withCorrelationId('order-1', run, '')),
      'causationId',
      ['non-empty string'],
    );
    expectInvalidArgument(
      thrown(() => withCorrelationId('order-1', run, 7 as never)),
      'causationId',
      ['number'],
    );
    expectInvalidArgument(
      thrown(() => withCorrelationId('order-1', 'nope' as never)),
      'fn',
      ['function'],
    );
    expect(ran).toBe(false);
    expect(currentCorrelationId()).toBeUndefined();
  });

  it('correlationHeaders refuses a given blank or non-string id and a non-object extra, never echoing a value', () => {
    expectInvalidArgument(
      thrown(() => correlationHeaders('')),
      'correlationId',
      ['blank'],
    );
    expectInvalidArgument(
      thrown(() => correlationHeaders(12 as never)),
      'correlationId',
      ['number'],
    );
    const e = expectInvalidArgument(
      thrown(() => correlationHeaders('order-1', 'token=s3cr3t' as never)),
      'extra',
      ['object'],
    );
    expect(e.message).not.toContain('s3cr3t');
    expectInvalidArgument(
      thrown(() => correlationHeaders(undefined, null as never)),
      'extra',
      ['null'],
    );
  });

  it('still accepts what it accepted: a given id, the current one, or a new UUID', () => {
    expect(correlationHeaders('order-1')[CORRELATION_ID_HEADER]).toBe('order-1');
    expect(withCorrelationId('flow-9', () => correlationHeaders())[CORRELATION_ID_HEADER]).toBe('flow-9');
    expect(withCorrelationId('flow-9', () => currentCorrelationId(), 'job:q:1')).toBe('flow-9');
    expect(correlationHeaders()[CORRELATION_ID_HEADER]).toMatch(/^[0-9a-f-]{36}$/);
  });
});
