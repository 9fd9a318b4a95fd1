import { InvalidOption } from './errors.js';
import { asOption, optionalObject, requireDurationMs, requireInt, requireMaxAttempts } from './validate.js';

/**
 * What `inbox.claim(tx, messageId)` found: `'claimed'` (first time: run the
 * effect in this transaction), `'duplicate'` (already committed by another
 * transaction, live or done: skip the effect, ack the broker), `'dead'` (failed
 * `maxAttempts` times: do not run it; the consumer terminates the message).
 */
export type InboxClaim = 'claimed' | 'duplicate' | 'dead';

/** What `inbox.fail(messageId, error)` decided: redeliver (`'retry'`) or give up (`'dead'`). */
export type InboxFailure = 'retry' | 'dead';

/** One inbox row, for operators and tests. */
export interface InboxEntry {
  readonly inbox: string;
  readonly messageId: string;
  /** `done`: the effect committed; `failed`: attempts recorded, not yet done; `dead`: gave up. */
  readonly state: 'done' | 'failed' | 'dead';
  readonly attempts: number;
  /** First seen (epoch ms, database clock). */
  readonly receivedAt: number;
  /** When the effect committed, or null. */
  readonly doneAt: number | null;
  readonly lastError: string | null;
}

/**
 * Options of `store.inbox(name, opts)`. The retention floor is computed from
 * the redelivery horizon: `maxDeliveries × ackWaitMs + maxBackoffMs +
 * producerHorizonMs`. An id pruned before that could still arrive again.
 */
export interface InboxOpts {
  /** Failed attempts before a message is dead (default 5). */
  maxAttempts?: number;
  /** The broker's redelivery limit (JetStream `max_deliver`, RabbitMQ `x-delivery-limit`), default 5. */
  maxDeliveries?: number;
  /** The broker's ack wait (JetStream `ack_wait`, default 30 000 ms). */
  ackWaitMs?: number;
  /** Longest redelivery backoff the consumer applies (default 300 000 ms). */
  maxBackoffMs?: number;
  /**
   * How long after its first publish the producer may publish the same message
   * again (its lease + publish timeout + longest retry backoff + a restart;
   * the JetStream default duplicate window, 120 000 ms, is the default).
   */
  producerHorizonMs?: number;
}

/** Resolved {@link InboxOpts} plus the floor they imply. */
export interface InboxSettings extends Readonly<Required<InboxOpts>> {
  readonly retentionFloorMs: number;
}

/** Validates inbox options (an {@link InvalidOption} naming the field) and computes the retention floor. Pure. */
export function resolveInboxOpts(opts: InboxOpts | undefined): InboxSettings {
  const o = asOption(() => optionalObject<InboxOpts>('inbox opts', opts)) ?? {};
  for (const k of Object.keys(o)) {
    if (!['maxAttempts', 'maxDeliveries', 'ackWaitMs', 'maxBackoffMs', 'producerHorizonMs'].includes(k))
      throw new InvalidOption(
        k.slice(0, 64),
        'is not an inbox option (maxAttempts, maxDeliveries, ackWaitMs, maxBackoffMs, producerHorizonMs)',
      );
  }
  const maxAttempts =
    o.maxAttempts === undefined ? 5 : asOption(() => requireMaxAttempts('maxAttempts', o.maxAttempts));
  const maxDeliveries =
    o.maxDeliveries === undefined ? 5 : asOption(() => requireInt('maxDeliveries', o.maxDeliveries, 1, 1_000_000));
  const ackWaitMs = o.ackWaitMs === undefined ? 30_000 : asOption(() => requireDurationMs('ackWaitMs', o.ackWaitMs));
  const maxBackoffMs =
    o.maxBackoffMs === undefined
      ? 300_000
      : asOption(() => requireDurationMs('maxBackoffMs', o.maxBackoffMs, { allowZero: true }));
  const producerHorizonMs =
    o.producerHorizonMs === undefined
      ? 120_000
      : asOption(() => requireDurationMs('producerHorizonMs', o.producerHorizonMs, { allowZero: true }));
  const retentionFloorMs = maxDeliveries * ackWaitMs + maxBackoffMs + producerHorizonMs;
  if (!Number.isSafeInteger(retentionFloorMs) || retentionFloorMs > 8.64e15)
    throw new InvalidOption('inbox opts', `give a retention floor of ${retentionFloorMs} ms, beyond 8.64e15 ms`);
  return Object.freeze({ maxAttempts, maxDeliveries, ackWaitMs, maxBackoffMs, producerHorizonMs, retentionFloorMs });
}

/** Explains the floor, for the error of a prune below it. */
export function describeFloor(s: InboxSettings): string {
  return `maxDeliveries ${s.maxDeliveries} × ackWaitMs ${s.ackWaitMs} + maxBackoffMs ${s.maxBackoffMs} + producerHorizonMs ${s.producerHorizonMs}`;
}
