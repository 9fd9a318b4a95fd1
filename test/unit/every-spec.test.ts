import { describe, expect, it } from '@jest/globals';
import { InvalidSpec } from '../../lib/contract/errors.js';
import { parseEverySpec } from '../../lib/contract/schedule-spec.js';
import { type EverySpecVectors, loadVectors } from './vectors.js';

const v = loadVectors<EverySpecVectors>('every-spec.json');

describe('@every spec grammar (conformance/contract/every-spec.json)', () => {
  it.each(v.accept.map((a) => [a.spec, a.intervalMs] as const))('accepts %j as %d ms', (spec, intervalMs) => {
    expect(parseEverySpec(spec)).toEqual({ spec, intervalMs });
  });

  it.each(v.reject.map((s) => [s] as const))('rejects %j with InvalidSpec naming it', (spec) => {
    let caught: unknown;
    try {
      parseEverySpec(spec);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvalidSpec);
    expect((caught as InvalidSpec).code).toBe('INVALID_SPEC');
    expect((caught as InvalidSpec).message).toContain(JSON.stringify(spec));
  });

  it.each([[undefined], [null], [1000], [{ every: '1s' }]])('rejects the non-string %p with InvalidSpec', (spec) => {
    expect(() => parseEverySpec(spec)).toThrow(InvalidSpec);
  });
});
