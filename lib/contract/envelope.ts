import { InvalidArgument } from './errors.js';
import type { JobHeaders } from './job-extras.js';
import { requireInt } from './validate.js';

/** Header of the message type (seed 004 `TYPE`), e.g. `order.placed`. */
export const MESSAGE_TYPE_HEADER = 'message-type';
/** Header of the message schema version (seed 004 `VERSION`), a positive integer as text. */
export const MESSAGE_VERSION_HEADER = 'message-version';
/** Header of the payload's content type (default `application/json`: alkstore payloads are JSON values). */
export const CONTENT_TYPE_HEADER = 'content-type';
/** Same name as `nestjs-alkstore/observability`'s `CORRELATION_ID_HEADER`. */
export const ENVELOPE_CORRELATION_HEADER = 'correlation-id';
/** Same name as `nestjs-alkstore/observability`'s `CAUSATION_ID_HEADER`. */
export const ENVELOPE_CAUSATION_HEADER = 'causation-id';

/** What `outboxEnqueue(…, { envelope })` takes (seed 004 `enqueue_envelope`). */
export interface EnvelopeInit {
  /** The message type, e.g. `order.placed`: a non-blank string of at most 255 characters. */
  readonly type: string;
  /** The schema version of the type, an integer ≥ 1 (default 1). */
  readonly version?: number;
  /** Default `application/json`. */
  readonly contentType?: string;
  /** The id shared by every message of one business flow (from the inbound request). */
  readonly correlationId?: string;
  /** The id of the request or message that caused this one. */
  readonly causationId?: string;
}

/** The envelope read back from a message's headers (publishers map it to broker headers, consumers read it typed). */
export interface MessageEnvelope {
  /** The outbox message id (also the broker's dedup id where it has one). */
  readonly messageId: string;
  readonly type: string | null;
  readonly version: number | null;
  readonly contentType: string;
  readonly correlationId: string | null;
  readonly causationId: string | null;
  /** Every header, the envelope's included. */
  readonly headers: JobHeaders;
}

const MAX_FIELD = 255;

function field(name: string, v: unknown): string {
  if (typeof v !== 'string' || v.trim().length === 0)
    throw new InvalidArgument(`envelope.${name}`, `must be a non-blank string, got ${v === null ? 'null' : typeof v}`);
  if (v.length > MAX_FIELD)
    throw new InvalidArgument(`envelope.${name}`, `must be at most ${MAX_FIELD} characters, got ${v.length}`);
  return v;
}

/**
 * The headers an envelope stands for, validated ({@link InvalidArgument} naming
 * `envelope.<field>`) before any I/O. Pure; the enqueue path merges them over
 * the caller's own `headers`.
 */
export function envelopeHeaders(init: unknown): Record<string, string> {
  if (init === null || typeof init !== 'object' || Array.isArray(init))
    throw new InvalidArgument(
      'envelope',
      'must be an object { type, version?, contentType?, correlationId?, causationId? }',
    );
  const e = init as Record<string, unknown>;
  for (const k of Object.keys(e)) {
    if (!['type', 'version', 'contentType', 'correlationId', 'causationId'].includes(k))
      throw new InvalidArgument(
        `envelope.${k.slice(0, 64)}`,
        'is not an envelope field (type, version, contentType, correlationId, causationId)',
      );
  }
  const out: Record<string, string> = {
    [MESSAGE_TYPE_HEADER]: field('type', e.type),
    [MESSAGE_VERSION_HEADER]: String(
      e.version === undefined ? 1 : requireInt('envelope.version', e.version, 1, 2_147_483_647),
    ),
    [CONTENT_TYPE_HEADER]: e.contentType === undefined ? 'application/json' : field('contentType', e.contentType),
  };
  if (e.correlationId !== undefined) out[ENVELOPE_CORRELATION_HEADER] = field('correlationId', e.correlationId);
  if (e.causationId !== undefined) out[ENVELOPE_CAUSATION_HEADER] = field('causationId', e.causationId);
  return out;
}

/** Reads the envelope of a message back from its id and headers. */
export function readEnvelope(messageId: string | number, headers: JobHeaders | undefined | null): MessageEnvelope {
  const h = headers ?? {};
  const v = h[MESSAGE_VERSION_HEADER];
  const version = v !== undefined && /^[1-9]\d{0,9}$/.test(v) ? Number(v) : null;
  return Object.freeze({
    messageId: String(messageId),
    type: h[MESSAGE_TYPE_HEADER] ?? null,
    version,
    contentType: h[CONTENT_TYPE_HEADER] ?? 'application/json',
    correlationId: h[ENVELOPE_CORRELATION_HEADER] ?? null,
    causationId: h[ENVELOPE_CAUSATION_HEADER] ?? null,
    headers: Object.freeze({ ...h }),
  });
}
