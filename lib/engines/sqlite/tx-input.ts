// SQLite only: a transaction's operations run synchronously inside its BEGIN, so their arguments are checked and encoded before the write is queued.
import { Codec } from '../../contract/errors.js';
import { planFlow, type FlowJob, type FlowPlan } from '../../contract/flows.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, encodePayload } from '../../contract/codec.js';
import { outboxQueueName } from '../../contract/names.js';
import { requireOffset, validateKey, validateName } from '../../contract/validate.js';
import {
  DEFAULT_QUEUE_OPTS,
  OUTBOX_QUEUE_OPTS,
  resolveJobStamp,
  type JobOpts,
  type JobWrite,
} from '../../contract/options.js';
import type { SqliteCore } from './context.js';

/**
 * Validation shared by every transactional entry point (withTx handles and
 * joined TypeORM transactions): names, payload encoding and opts stamping all
 * happen before any SQL.
 */

export interface EnqueueInput {
  queue: string;
  text: string;
  stamp: JobWrite;
}

/** What the inputs need of the store; `maxPayloadBytes` is the store's (the default when a caller has none). */
type InputCore = Pick<SqliteCore, 'registeredQueueOpts'> &
  Partial<Pick<SqliteCore, 'maxPayloadBytes' | 'enqueueHeaders'>>;

export function enqueueInput(core: InputCore, queue: string, payload: unknown, opts?: JobOpts): EnqueueInput {
  const q = validateName('queue', queue);
  const text = encodePayload(payload, 'payload', core.maxPayloadBytes);
  return {
    queue: q,
    text,
    stamp: resolveJobStamp(core.registeredQueueOpts(q, DEFAULT_QUEUE_OPTS), opts, core.enqueueHeaders ?? null),
  };
}

/** A flow checked and resolved for `tx.enqueueFlow`, before any write. */
export function flowInput(core: InputCore, queue: string, flow: FlowJob): FlowPlan {
  return planFlow(flow, validateName('queue', queue), {
    queueOpts: (q) => core.registeredQueueOpts(q, DEFAULT_QUEUE_OPTS),
    enqueueHeaders: core.enqueueHeaders ?? null,
    maxPayloadBytes: core.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
  });
}

export function outboxEnqueueInput(core: InputCore, outbox: string, payload: unknown, opts?: JobOpts): EnqueueInput {
  const q = outboxQueueName(outbox);
  const text = encodePayload(payload, 'payload', core.maxPayloadBytes);
  return {
    queue: q,
    text,
    stamp: resolveJobStamp(core.registeredQueueOpts(q, OUTBOX_QUEUE_OPTS), opts, core.enqueueHeaders ?? null),
  };
}

export interface PublishInput {
  stream: string;
  key: string | null;
  text: string;
}

export function publishInput(core: InputCore, stream: string, payload: unknown): PublishInput {
  return {
    stream: validateName('stream', stream),
    key: null,
    text: encodePayload(payload, 'payload', core.maxPayloadBytes),
  };
}

/** A keyed publish: the key is required (a `null` key is refused, not taken as "unkeyed"). */
export function publishWithKeyInput(core: InputCore, stream: string, key: unknown, payload: unknown): PublishInput {
  const s = validateName('stream', stream);
  return { stream: s, key: validateKey('key', key), text: encodePayload(payload, 'payload', core.maxPayloadBytes) };
}

export function notifyInput(channel: string, payload: unknown): string {
  const c = validateName('channel', channel);
  if (payload !== undefined && typeof payload !== 'string')
    throw new Codec(`notify payload on channel ${JSON.stringify(c)}`, `must be a string, got ${typeof payload}`);
  return c;
}

export interface SaveOffsetInput {
  stream: string;
  consumer: string;
  offset: number;
}

export function saveOffsetInput(stream: string, consumer: string, offset: number): SaveOffsetInput {
  return {
    stream: validateName('stream', stream),
    consumer: validateKey('consumer', consumer),
    offset: requireOffset('offset', offset),
  };
}
