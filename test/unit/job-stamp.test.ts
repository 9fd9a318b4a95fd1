import { describe, expect, it } from '@jest/globals';
import {
  DEFAULT_QUEUE_OPTS,
  OUTBOX_QUEUE_OPTS,
  type JobOpts,
  resolveJobStamp,
  resolveQueueOpts,
} from '../../lib/contract/options.js';

const queueOpts = resolveQueueOpts({
  leaseMs: 1_000,
  maxAttempts: 4,
  backoffBaseMs: 200,
  deadLetterRetentionMs: 5_000,
});

describe('queue options and job stamps', () => {
  it('defaults plain queues to 300 s visibility, 3 attempts, 5 s backoff base, keep dead forever', () => {
    expect(DEFAULT_QUEUE_OPTS).toEqual({
      leaseMs: 300_000,
      maxAttempts: 3,
      backoffBaseMs: 5_000,
      deadLetterRetentionMs: null,
      resultRetentionMs: 604_800_000,
      limitKeys: null,
    });
    expect(resolveQueueOpts(undefined)).toEqual(DEFAULT_QUEUE_OPTS);
  });

  it('defaults outbox-backed queues to 60 s visibility and 5 attempts', () => {
    expect(OUTBOX_QUEUE_OPTS).toEqual({
      leaseMs: 60_000,
      maxAttempts: 5,
      backoffBaseMs: 5_000,
      deadLetterRetentionMs: null,
      resultRetentionMs: 604_800_000,
      limitKeys: null,
    });
    expect(resolveQueueOpts({}, OUTBOX_QUEUE_OPTS)).toEqual(OUTBOX_QUEUE_OPTS);
  });

  it('stamps the queue options when the job sets none', () => {
    expect(resolveJobStamp(queueOpts, undefined)).toEqual({
      priority: 0,
      visibilityTimeoutMs: 1_000,
      maxAttempts: 4,
      backoffBaseMs: 200,
      deadLetterRetentionMs: 5_000,
      delayMs: null,
      runAtMs: null,
      expiresInMs: null,
      headersText: null,
      uniqueKey: null,
      replace: false,
      orderingKey: null,
      concurrencyKey: null,
      rateLimitKey: null,
    });
  });

  it('lets delayMs win over runAt', () => {
    const s = resolveJobStamp(queueOpts, { delayMs: 10, runAt: 123_456 });
    expect(s.delayMs).toBe(10);
    expect(s.runAtMs).toBeNull();
    const zero = resolveJobStamp(queueOpts, { delayMs: 0, runAt: 123_456 });
    expect(zero.delayMs).toBe(0);
    expect(zero.runAtMs).toBeNull();
  });

  it('uses runAt when no delay is given', () => {
    const s = resolveJobStamp(queueOpts, { runAt: 1_700_000_000_123 });
    expect(s.delayMs).toBeNull();
    expect(s.runAtMs).toBe(1_700_000_000_123);
  });

  it('lets per-job options override the queue options for that job only', () => {
    const opts: JobOpts = {
      priority: -5,
      maxAttempts: 9,
      leaseMs: 50,
      backoffBaseMs: 0,
      deadLetterRetentionMs: 7,
      expiresInMs: 100,
    };
    expect(resolveJobStamp(queueOpts, opts)).toEqual({
      priority: -5,
      maxAttempts: 9,
      visibilityTimeoutMs: 50,
      backoffBaseMs: 0,
      deadLetterRetentionMs: 7,
      delayMs: null,
      runAtMs: null,
      expiresInMs: 100,
      headersText: null,
      uniqueKey: null,
      replace: false,
      orderingKey: null,
      concurrencyKey: null,
      rateLimitKey: null,
    });
    // The queue's options are untouched.
    expect(resolveJobStamp(queueOpts, {}).maxAttempts).toBe(4);
  });

  it('keeps dead rows forever when a job says deadLetterRetentionMs: null over a queue retention', () => {
    expect(queueOpts.deadLetterRetentionMs).toBe(5_000);
    expect(resolveJobStamp(queueOpts, { deadLetterRetentionMs: null }).deadLetterRetentionMs).toBeNull();
    expect(resolveJobStamp(queueOpts, {}).deadLetterRetentionMs).toBe(5_000);
  });

  it.each<[string, JobOpts]>([
    ['priority 1.5', { priority: 1.5 }],
    ['priority NaN', { priority: Number.NaN }],
    ['maxAttempts 0', { maxAttempts: 0 }],
    ['maxAttempts 2.5', { maxAttempts: 2.5 }],
    ['leaseMs 0', { leaseMs: 0 }],
    ['leaseMs -1', { leaseMs: -1 }],
    ['backoffBaseMs -1', { backoffBaseMs: -1 }],
    ['delayMs -1', { delayMs: -1 }],
    ['delayMs NaN', { delayMs: Number.NaN }],
    ['delayMs Infinity', { delayMs: Number.POSITIVE_INFINITY }],
    ['runAt NaN', { runAt: Number.NaN }],
    ['expiresInMs 0', { expiresInMs: 0 }],
    ['deadLetterRetentionMs -1', { deadLetterRetentionMs: -1 }],
  ])('refuses %s with a RangeError naming the field', (label, opts) => {
    const field = label.split(' ')[0]!;
    let caught: unknown;
    try {
      resolveJobStamp(queueOpts, opts);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RangeError);
    expect((caught as RangeError).message).toContain(field);
  });

  it('refuses bad queue options with a RangeError', () => {
    expect(() => resolveQueueOpts({ leaseMs: 0 })).toThrow(RangeError);
    expect(() => resolveQueueOpts({ maxAttempts: 0 })).toThrow(RangeError);
    expect(() => resolveQueueOpts({ backoffBaseMs: Number.NaN })).toThrow(RangeError);
  });
});
