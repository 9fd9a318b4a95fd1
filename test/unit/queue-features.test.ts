import { describe, expect, it } from '@jest/globals';
import { InvalidArgument } from '../../lib/contract/errors.js';
import { decodeHeaders, encodeHeaders, resolveJobExtras } from '../../lib/contract/job-extras.js';
import { rateAllowance, resolveRateLimit } from '../../lib/contract/queue-settings.js';
import { loadVectors, type QueueFeatureVectors } from './vectors.js';

const v = loadVectors<QueueFeatureVectors>('queue-features.json');

describe('rate limit windows (conformance/contract/queue-features.json)', () => {
  it.each(v.rateWindow.map((c) => [c.note, c] as const))('%s', (_note, c) => {
    expect(rateAllowance(c.limit, c.stored, c.now, c.want)).toEqual({
      window: c.window,
      used: c.used,
      allowed: c.allowed,
    });
  });

  it('validates a limit: integers in [1, 2^31-1], or null', () => {
    expect(resolveRateLimit(null)).toBeNull();
    expect(resolveRateLimit({ max: 1, perMs: 2 ** 31 - 1 })).toEqual({ max: 1, perMs: 2 ** 31 - 1 });
    for (const bad of [
      { max: 0, perMs: 1 },
      { max: 1, perMs: 0 },
      { max: 1.5, perMs: 1 },
      { max: 1, perMs: 2 ** 31 },
      { max: 1 },
      undefined,
      5,
    ]) {
      expect(() => resolveRateLimit(bad as never)).toThrow(InvalidArgument);
    }
  });
});

describe('headers (conformance/contract/queue-features.json)', () => {
  it.each(v.headers.accept.map((h) => [JSON.stringify(h), h] as const))('round-trips %s', (_s, h) => {
    expect(decodeHeaders(encodeHeaders(h))).toEqual(h);
  });

  it.each(v.headers.reject.map((c) => [c.note, c] as const))('refuses %s', (_note, c) => {
    expect(() => encodeHeaders(c.headers)).toThrow(InvalidArgument);
  });

  it.each(v.headers.sized.map((c) => [`${c.name}: ${c.valueBytes} bytes -> ${c.ok ? 'ok' : 'refused'}`, c] as const))(
    '%s',
    (_s, c) => {
      const h = { [c.name]: 'v'.repeat(c.valueBytes) };
      if (c.ok) expect(decodeHeaders(encodeHeaders(h))).toEqual(h);
      else expect(() => encodeHeaders(h)).toThrow(InvalidArgument);
    },
  );

  it('no headers and {} are stored as nothing and read back as a frozen {}', () => {
    expect(encodeHeaders(undefined)).toBeNull();
    expect(encodeHeaders({})).toBeNull();
    const none = decodeHeaders(null);
    expect(none).toEqual({});
    expect(Object.isFrozen(none)).toBe(true);
  });

  it('onConflict needs a uniqueKey and is keep or replace', () => {
    expect(resolveJobExtras({ uniqueKey: 'k', onConflict: 'replace' })).toMatchObject({
      uniqueKey: 'k',
      replace: true,
    });
    expect(resolveJobExtras({ uniqueKey: 'k' })).toMatchObject({ replace: false });
    expect(() => resolveJobExtras({ onConflict: 'keep' })).toThrow(InvalidArgument);
    expect(() => resolveJobExtras({ uniqueKey: 'k', onConflict: 'merge' as never })).toThrow(InvalidArgument);
  });
});
