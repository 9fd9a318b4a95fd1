import { describe, expect, it } from '@jest/globals';
import { InvalidName, ReservedName } from '../../lib/contract/errors.js';
import {
  LISTENER_RECONNECTED_CHANNEL,
  RESERVED_PREFIX,
  SCHEDULER_LOCK,
  outboxQueueName,
  validateKey,
  validateName,
} from '../../lib/contract/names.js';
import { type NameVectors, loadVectors } from './vectors.js';

const v = loadVectors<NameVectors>('names.json');

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('names (conformance/contract/names.json)', () => {
  it('pins the reserved strings', () => {
    expect(RESERVED_PREFIX).toBe('__alkstore_');
    expect(SCHEDULER_LOCK).toBe('__alkstore_scheduler');
    expect(LISTENER_RECONNECTED_CHANNEL).toBe('__alkstore_listener_reconnected__');
  });

  it.each(v.valid.map((n) => [n] as const))('accepts %j for every kind', (name) => {
    for (const kind of v.kinds) expect(validateName(kind, name)).toBe(name);
  });

  it.each(v.reserved.map((n) => [n] as const))('refuses the reserved %j for every kind with ReservedName', (name) => {
    for (const kind of v.kinds) {
      const err = thrown(() => validateName(kind, name));
      expect(err).toBeInstanceOf(ReservedName);
      expect((err as ReservedName).code).toBe('RESERVED_NAME');
      expect((err as ReservedName).message).toContain(JSON.stringify(name));
      expect((err as ReservedName).message).toContain(kind);
    }
  });

  it.each(v.invalid.map((n) => [n] as const))(
    'refuses the empty or blank %j for every kind with InvalidName',
    (name) => {
      for (const kind of v.kinds) {
        const err = thrown(() => validateName(kind, name));
        expect(err).toBeInstanceOf(InvalidName);
        expect((err as InvalidName).code).toBe('INVALID_NAME');
        expect((err as InvalidName).message).toContain(JSON.stringify(name));
      }
    },
  );

  it('refuses non-strings with InvalidName', () => {
    for (const bad of [undefined, null, 42, {}, ['q']]) expect(() => validateName('queue', bad)).toThrow(InvalidName);
  });

  it('treats keys and consumer names as free-form but non-empty', () => {
    for (const name of [...v.valid, ...v.reserved]) expect(validateKey('key', name)).toBe(name);
    for (const name of v.invalid) expect(() => validateKey('consumer', name)).toThrow(InvalidName);
  });

  it.each(v.outboxQueue.map((o) => [o.outbox, o.queue] as const))(
    'derives the backing queue of outbox %j as %j',
    (outbox, queue) => {
      expect(outboxQueueName(outbox)).toBe(queue);
      // The derived name is itself reserved: unreachable through a plain queue name.
      expect(() => validateName('queue', queue)).toThrow(ReservedName);
    },
  );

  it('validates the outbox name before deriving', () => {
    expect(() => outboxQueueName('')).toThrow(InvalidName);
    expect(() => outboxQueueName('__alkstore_x')).toThrow(ReservedName);
  });
});
