import { describe, expect, it } from '@jest/globals';
import { AlkstoreError, InvalidOption } from '../../lib/contract/errors.js';
import { DEFAULT_OUTBOX_SETTINGS, OutboxSettings } from '../../lib/outbox/index.js';

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
      batchSize: 32,
      leaseMs: 30_000,
      maxInFlight: 64,
      publishTimeoutMs: 10_000,
      pollIntervalMs: 100,
      idlePollIntervalMs: 1_000,
      drainTimeoutMs: 10_000,
      storeTimeoutMs: 5_000,
      statsIntervalMs: 10_000,
      ordering: 'unordered',
      retry: { baseMs: 1_000, maxDelayMs: 300_000, maxAttempts: 5, jitter: 0.2 },
    });
    expect(DEFAULT_OUTBOX_SETTINGS.batchSize).toBe(32);
  });

  it('overrides only the given fields, retry fields included', () => {
    const s = OutboxSettings.create({ batchSize: 8, retry: { maxAttempts: 9 } });
    expect(s.batchSize).toBe(8);
    expect(s.retry).toEqual({ baseMs: 1_000, maxDelayMs: 300_000, maxAttempts: 9, jitter: 0.2 });
    expect(s.leaseMs).toBe(30_000);
  });

  it('is immutable', () => {
    const s = new OutboxSettings({ batchSize: 4 });
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.retry)).toBe(true);
    expect(() => {
      (s as { batchSize: number }).batchSize = 5;
    }).toThrow(TypeError);
  });

  it('passes an existing instance through create unchanged', () => {
    const s = new OutboxSettings({ batchSize: 4 });
    expect(OutboxSettings.create(s)).toBe(s);
  });

  it.each([
    ['batchSize', { batchSize: 0 }],
    ['batchSize', { batchSize: 1.5 }],
    ['maxInFlight', { maxInFlight: 0 }],
    ['maxInFlight', { maxInFlight: Number.NaN }],
    ['leaseMs', { leaseMs: -1 }],
    ['pollIntervalMs', { pollIntervalMs: 0 }],
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
    expect(OutboxSettings.create({ leaseMs: 5_001, publishTimeoutMs: 5_000, storeTimeoutMs: 2_000 }).leaseMs).toBe(5_001);
  });

  it('requires store calls to fit in half a lease, so a renewal lands before the deadline', () => {
    expect(invalid(() => OutboxSettings.create({ leaseMs: 4_000, publishTimeoutMs: 1_000, storeTimeoutMs: 2_001 })).field).toBe('storeTimeoutMs');
  });

  it('requires the idle poll to be no shorter than the busy poll', () => {
    expect(invalid(() => OutboxSettings.create({ pollIntervalMs: 500, idlePollIntervalMs: 100 })).field).toBe('idlePollIntervalMs');
  });

  it('accepts unordered and per-key ordering, and refuses any other', () => {
    expect(OutboxSettings.create({ ordering: 'per-key' }).ordering).toBe('per-key');
    expect(OutboxSettings.create({ ordering: 'unordered' }).ordering).toBe('unordered');
    const err = invalid(() => OutboxSettings.create({ ordering: 'fifo' as never }));
    expect(err.field).toBe('ordering');
    expect(err.message).toMatch(/per-key/);
  });

  it('refuses unknown fields (typos) by name', () => {
    expect(invalid(() => OutboxSettings.create({ batchsize: 3 } as never)).field).toBe('batchsize');
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
      ORDERS_BATCH_SIZE: '10',
      ORDERS_LEASE_MS: ' 60000 ',
      ORDERS_MAX_IN_FLIGHT: '20',
      ORDERS_PUBLISH_TIMEOUT_MS: '20000',
      ORDERS_POLL_INTERVAL_MS: '50',
      ORDERS_IDLE_POLL_INTERVAL_MS: '2000',
      ORDERS_DRAIN_TIMEOUT_MS: '0',
      ORDERS_STORE_TIMEOUT_MS: '3000',
      ORDERS_STATS_INTERVAL_MS: '15000',
      ORDERS_ORDERING: 'unordered',
      ORDERS_RETRY_BASE_MS: '500',
      ORDERS_RETRY_MAX_DELAY_MS: '90000',
      ORDERS_RETRY_MAX_ATTEMPTS: '7',
      ORDERS_RETRY_JITTER: '0.5',
      OTHER_BATCH_SIZE: '99',
    });
    expect(s.toJSON()).toEqual({
      batchSize: 10,
      leaseMs: 60_000,
      maxInFlight: 20,
      publishTimeoutMs: 20_000,
      pollIntervalMs: 50,
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
    expect(OutboxSettings.fromEnv('X_', { X_BATCH_SIZE: '' }).batchSize).toBe(32);
  });

  it('layers the environment over a base', () => {
    const s = OutboxSettings.fromEnv('X_', { X_BATCH_SIZE: '3' }, { batchSize: 7, maxInFlight: 9 });
    expect(s.batchSize).toBe(3);
    expect(s.maxInFlight).toBe(9);
  });

  it.each([
    ['X_BATCH_SIZE', 'ten'],
    ['X_LEASE_MS', '30s'],
    ['X_MAX_IN_FLIGHT', '-4'],
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
    const zero = invalid(() => OutboxSettings.fromEnv('X_', { X_BATCH_SIZE: '0' }));
    expect(zero.field).toBe('X_BATCH_SIZE');
    expect(invalid(() => OutboxSettings.fromEnv('X_', { X_ORDERING: 'fifo' })).field).toBe('X_ORDERING');
    expect(OutboxSettings.fromEnv('X_', { X_ORDERING: 'per-key' }).ordering).toBe('per-key');
  });

  it('does not read process.env unless called, and reads it by default when called', () => {
    const key = `ALKSTORE_TEST_${process.pid}_BATCH_SIZE`;
    process.env[key] = '11';
    try {
      expect(OutboxSettings.create().batchSize).toBe(32);
      expect(OutboxSettings.fromEnv(`ALKSTORE_TEST_${process.pid}_`).batchSize).toBe(11);
    } finally {
      delete process.env[key];
    }
  });
});
