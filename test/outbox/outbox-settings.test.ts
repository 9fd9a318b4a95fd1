import { describe, expect, it } from '@jest/globals';
import { AlkstoreError, InvalidOption } from '../../lib/contract/errors.js';
import { DEFAULT_OUTBOX_SETTINGS, OutboxSettings, type OutboxSettingsInput } from '../../lib/outbox/index.js';

function invalid(fn: () => unknown): InvalidOption {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidOption);
    expect((err as AlkstoreError).code).toBe('INVALID_OPTION');
    return err as InvalidOption;
  }
  throw new Error('expected an InvalidOption');
}

describe('OutboxSettings', () => {
  it('fills every field with the documented defaults', () => {
    const s = OutboxSettings.create();
    expect(s.toJSON()).toEqual({
      claimSize: 32,
      leaseMs: 30_000,
      concurrency: 64,
      publishTimeoutMs: 10_000,
      busyPollIntervalMs: 100,
      idlePollIntervalMs: 1_000,
      drainTimeoutMs: 10_000,
      storeTimeoutMs: 5_000,
      statsIntervalMs: 10_000,
      ordering: 'unordered',
      retry: { baseMs: 1_000, maxDelayMs: 300_000, maxAttempts: 5, jitter: 0.2 },
    });
    expect(DEFAULT_OUTBOX_SETTINGS.claimSize).toBe(32);
  });

  it('overrides only the given fields, retry fields included', () => {
    const s = OutboxSettings.create({ claimSize: 8, retry: { maxAttempts: 9 } });
    expect(s.claimSize).toBe(8);
    expect(s.retry).toEqual({ baseMs: 1_000, maxDelayMs: 300_000, maxAttempts: 9, jitter: 0.2 });
    expect(s.leaseMs).toBe(30_000);
  });

  it('is immutable', () => {
    const s = new OutboxSettings({ claimSize: 4 });
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.retry)).toBe(true);
    expect(() => {
      (s as { claimSize: number }).claimSize = 5;
    }).toThrow(TypeError);
  });

  it('passes an existing instance through create unchanged', () => {
    const s = new OutboxSettings({ claimSize: 4 });
    expect(OutboxSettings.create(s)).toBe(s);
  });

  it.each([
    ['claimSize', { claimSize: 0 }],
    ['claimSize', { claimSize: 1.5 }],
    ['concurrency', { concurrency: 0 }],
    ['concurrency', { concurrency: Number.NaN }],
    ['leaseMs', { leaseMs: -1 }],
    ['busyPollIntervalMs', { busyPollIntervalMs: 0 }],
    ['publishTimeoutMs', { publishTimeoutMs: Number.POSITIVE_INFINITY }],
    ['drainTimeoutMs', { drainTimeoutMs: -5 }],
    ['statsIntervalMs', { statsIntervalMs: 3_000_000_000 }],
    ['retry.jitter', { retry: { jitter: -0.1 } }],
    ['retry.jitter', { retry: { jitter: 1 } }],
    ['retry.maxAttempts', { retry: { maxAttempts: 0 } }],
    ['retry.baseMs', { retry: { baseMs: 10_000, maxDelayMs: 5_000 } }],
  ])('rejects a bad %s, naming it', (field, input) => {
    const err = invalid(() => OutboxSettings.create(input as never));
    expect(err.field).toBe(field);
    expect(err.message).toContain(field);
  });

  it('requires the lease to be longer than the publish timeout', () => {
    const err = invalid(() => OutboxSettings.create({ leaseMs: 5_000, publishTimeoutMs: 5_000 }));
    expect(err.field).toBe('leaseMs');
    expect(err.message).toMatch(/greater than publishTimeoutMs/);
    expect(OutboxSettings.create({ leaseMs: 5_001, publishTimeoutMs: 5_000, storeTimeoutMs: 2_000 }).leaseMs).toBe(
      5_001,
    );
  });

  it('requires store calls to fit in half a lease, so a renewal lands before the deadline', () => {
    expect(
      invalid(() => OutboxSettings.create({ leaseMs: 4_000, publishTimeoutMs: 1_000, storeTimeoutMs: 2_001 })).field,
    ).toBe('storeTimeoutMs');
  });

  it('requires the idle poll to be no shorter than the busy poll', () => {
    expect(invalid(() => OutboxSettings.create({ busyPollIntervalMs: 500, idlePollIntervalMs: 100 })).field).toBe(
      'idlePollIntervalMs',
    );
  });

  it('accepts unordered and per-key ordering, and refuses any other', () => {
    expect(OutboxSettings.create({ ordering: 'per-key' }).ordering).toBe('per-key');
    expect(OutboxSettings.create({ ordering: 'unordered' }).ordering).toBe('unordered');
    const err = invalid(() => OutboxSettings.create({ ordering: 'fifo' as never }));
    expect(err.field).toBe('ordering');
    expect(err.message).toMatch(/per-key/);
  });

  it('refuses unknown fields (typos) by name', () => {
    expect(invalid(() => OutboxSettings.create({ claimsize: 3 } as never)).field).toBe('claimsize');
    expect(invalid(() => OutboxSettings.create({ retry: { base: 3 } } as never)).field).toBe('retry.base');
  });

  it('never echoes the offending value', () => {
    const err = invalid(() => OutboxSettings.create({ leaseMs: 123_456_789_123 }));
    expect(err.message).not.toContain('123456789123');
  });
});

describe('OutboxSettings.fromEnv', () => {
  it('reads prefixed variables and defaults the rest', () => {
    const s = OutboxSettings.fromEnv('ORDERS_', {
      ORDERS_CLAIM_SIZE: '10',
      ORDERS_LEASE_MS: ' 60000 ',
      ORDERS_CONCURRENCY: '20',
      ORDERS_PUBLISH_TIMEOUT_MS: '20000',
      ORDERS_BUSY_POLL_INTERVAL_MS: '50',
      ORDERS_IDLE_POLL_INTERVAL_MS: '2000',
      ORDERS_DRAIN_TIMEOUT_MS: '0',
      ORDERS_STORE_TIMEOUT_MS: '3000',
      ORDERS_STATS_INTERVAL_MS: '15000',
      ORDERS_ORDERING: 'unordered',
      ORDERS_RETRY_BASE_MS: '500',
      ORDERS_RETRY_MAX_DELAY_MS: '90000',
      ORDERS_RETRY_MAX_ATTEMPTS: '7',
      ORDERS_RETRY_JITTER: '0.5',
      OTHER_CLAIM_SIZE: '99',
    });
    expect(s.toJSON()).toEqual({
      claimSize: 10,
      leaseMs: 60_000,
      concurrency: 20,
      publishTimeoutMs: 20_000,
      busyPollIntervalMs: 50,
      idlePollIntervalMs: 2_000,
      drainTimeoutMs: 0,
      storeTimeoutMs: 3_000,
      statsIntervalMs: 15_000,
      ordering: 'unordered',
      retry: { baseMs: 500, maxDelayMs: 90_000, maxAttempts: 7, jitter: 0.5 },
    });
  });

  it('gives the defaults for an empty environment, and treats empty values as unset', () => {
    expect(OutboxSettings.fromEnv('X_', {}).toJSON()).toEqual(OutboxSettings.create().toJSON());
    expect(OutboxSettings.fromEnv('X_', { X_CLAIM_SIZE: '' }).claimSize).toBe(32);
  });

  it('layers the environment over a base', () => {
    const s = OutboxSettings.fromEnv('X_', { X_CLAIM_SIZE: '3' }, { claimSize: 7, concurrency: 9 });
    expect(s.claimSize).toBe(3);
    expect(s.concurrency).toBe(9);
  });

  it.each([
    ['X_CLAIM_SIZE', 'ten'],
    ['X_LEASE_MS', '30s'],
    ['X_CONCURRENCY', '-4'],
    ['X_RETRY_JITTER', 'lots'],
    ['X_RETRY_MAX_ATTEMPTS', '1e3'],
  ])('names the malformed variable %s without echoing its value', (variable, value) => {
    const err = invalid(() => OutboxSettings.fromEnv('X_', { [variable]: value }));
    expect(err.field).toBe(variable);
    expect(err.message).toContain(variable);
    expect(err.message).not.toContain(value);
  });

  it('names the variable for an out-of-range value without echoing it', () => {
    const err = invalid(() => OutboxSettings.fromEnv('X_', { X_RETRY_JITTER: '1.5' }));
    expect(err.field).toBe('X_RETRY_JITTER');
    expect(err.message).not.toContain('1.5');
    const zero = invalid(() => OutboxSettings.fromEnv('X_', { X_CLAIM_SIZE: '0' }));
    expect(zero.field).toBe('X_CLAIM_SIZE');
    expect(invalid(() => OutboxSettings.fromEnv('X_', { X_ORDERING: 'fifo' })).field).toBe('X_ORDERING');
    expect(OutboxSettings.fromEnv('X_', { X_ORDERING: 'per-key' }).ordering).toBe('per-key');
  });

  it('does not read process.env unless called, and reads it by default when called', () => {
    const key = `ALKSTORE_TEST_${process.pid}_CLAIM_SIZE`;
    process.env[key] = '11';
    try {
      expect(OutboxSettings.create().claimSize).toBe(32);
      expect(OutboxSettings.fromEnv(`ALKSTORE_TEST_${process.pid}_`).claimSize).toBe(11);
    } finally {
      delete process.env[key];
    }
  });
});

describe('OutboxSettings: the names of 0.2 are refused, naming the new ones', () => {
  it('batchSize, maxInFlight and pollIntervalMs are InvalidOption naming claimSize, concurrency and busyPollIntervalMs', () => {
    const cases: [string, string][] = [
      ['batchSize', 'claimSize'],
      ['maxInFlight', 'concurrency'],
      ['pollIntervalMs', 'busyPollIntervalMs'],
    ];
    for (const [old, next] of cases) {
      const err = invalid(() => OutboxSettings.create({ [old]: 5 } as OutboxSettingsInput));
      expect({ field: err.field, names: err.message.includes(next) }).toEqual({ field: old, names: true });
    }
    expect(OutboxSettings.create({ claimSize: 5 })).not.toHaveProperty('batchSize');
  });

  it('fromEnv refuses the old variables, naming the new one', () => {
    const err = invalid(() => OutboxSettings.fromEnv('OLD_', { OLD_BATCH_SIZE: '4' }));
    expect(err.field).toBe('OLD_BATCH_SIZE');
    expect(err.message).toContain('OLD_CLAIM_SIZE');
    expect(invalid(() => OutboxSettings.fromEnv('OLD_', { OLD_MAX_IN_FLIGHT: '8' })).message).toContain(
      'OLD_CONCURRENCY',
    );
  });
});
