import { envelopeHeaders, type EnvelopeInit } from './envelope.js';
import { InvalidArgument } from './errors.js';
import { optionalObject, requireArray, validateKey } from './validate.js';

/** String metadata that travels with a job or outbox message (SPEC §10): correlation id, causation id, `traceparent`. */
export type JobHeaders = Readonly<Record<string, string>>;

/** Largest total size of a job's headers: the UTF-8 bytes of every key and value together. */
export const MAX_HEADERS_BYTES = 8192;

/** What a conflicting `uniqueKey` enqueue does: keep the live job as is, or replace a pending job's payload and run time (debounce). */
export type OnConflict = 'keep' | 'replace';

/** The per-job options beyond the stamp, validated and in storage form. */
export interface JobExtras {
  /** Headers as JSON text, or null when there are none. */
  headersText: string | null;
  uniqueKey: string | null;
  /** `onConflict: 'replace'`. */
  replace: boolean;
  orderingKey: string | null;
}

/** The fields of `EnqueueOpts` that {@link resolveJobExtras} reads. */
export interface JobExtrasInput {
  headers?: JobHeaders;
  uniqueKey?: string;
  onConflict?: OnConflict;
  orderingKey?: string;
  envelope?: EnvelopeInit;
}

const EMPTY_HEADERS: JobHeaders = Object.freeze({});
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Validates a `uniqueKey` argument (e.g. of `cancelByKey`): {@link InvalidName} naming it. */
export function validateUniqueKey(v: unknown): string {
  return validateKey('uniqueKey', v);
}

function headerText(what: string, v: unknown): string {
  if (typeof v !== 'string') throw new InvalidArgument(what, `must be a string, got ${v === null ? 'null' : typeof v}`);
  if (v.includes('\u0000') || LONE_SURROGATE.test(v))
    throw new InvalidArgument(what, 'must be well-formed text without NUL');
  return v;
}

/**
 * Validates headers (a plain object of string → string, at most
 * {@link MAX_HEADERS_BYTES} in all) and encodes them; null when empty.
 * {@link InvalidArgument} naming the offending header; values are never echoed.
 */
export function encodeHeaders(headers: unknown): string | null {
  if (headers === undefined || headers === null) return null;
  if (typeof headers !== 'object' || Array.isArray(headers))
    throw new InvalidArgument(
      'headers',
      `must be an object of string values, got ${Array.isArray(headers) ? 'an array' : typeof headers}`,
    );
  const proto = Object.getPrototypeOf(headers) as unknown;
  if (proto !== Object.prototype && proto !== null)
    throw new InvalidArgument('headers', 'must be a plain object of string values');
  const entries = Object.entries(headers as Record<string, unknown>);
  if (entries.length === 0) return null;
  let bytes = 0;
  const clean: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (k.length === 0) throw new InvalidArgument('headers', 'must not have an empty name');
    headerText(`header name ${JSON.stringify(k.slice(0, 64))}`, k);
    clean[k] = headerText(`header ${JSON.stringify(k.slice(0, 64))}`, v);
    bytes += Buffer.byteLength(k, 'utf8') + Buffer.byteLength(v as string, 'utf8');
  }
  if (bytes > MAX_HEADERS_BYTES)
    throw new InvalidArgument(
      'headers',
      `must be at most ${MAX_HEADERS_BYTES} bytes of names and values (UTF-8), got ${bytes}`,
    );
  return JSON.stringify(clean);
}

/** Stored headers text (or null) as a frozen object; `{}` when none. */
export function decodeHeaders(text: string | null | undefined): JobHeaders {
  if (text === null || text === undefined) return EMPTY_HEADERS;
  const parsed = JSON.parse(text) as Record<string, string>;
  return Object.freeze(parsed);
}

/**
 * Adds context headers to every enqueue of one store (its `enqueueHeaders`
 * option; `openStore` sets `withTraceContext` of `nestjs-alkstore/observability` when
 * `@opentelemetry/api` is installed). Called synchronously on the enqueue
 * path with the caller's headers; returns them, or a copy with more. Headers
 * the caller set should win. A result that is not valid headers is ignored.
 */
export type EnqueueHeadersHook = (headers: JobHeaders | undefined) => JobHeaders | undefined;

/** The headers text of a job enqueued without options: the store's context headers alone (null when the hook adds none). */
export function contextHeadersText(hook: EnqueueHeadersHook): string | null {
  return encodeWithContext(undefined, hook);
}

function encodeWithContext(headers: JobHeaders | undefined, hook: EnqueueHeadersHook | null): string | null {
  const isPlain = headers === undefined || (headers !== null && typeof headers === 'object' && !Array.isArray(headers));
  if (!hook || !isPlain) return encodeHeaders(headers);
  let merged: JobHeaders | undefined;
  try {
    merged = hook(headers);
  } catch {
    // Context never makes a valid enqueue fail.
    return encodeHeaders(headers);
  }
  if (merged === headers) return encodeHeaders(headers);
  try {
    return encodeHeaders(merged);
  } catch {
    // The caller's own headers decide (and name any error): context never makes a valid enqueue fail.
    return encodeHeaders(headers);
  }
}

/**
 * Validates `headers`, `uniqueKey`, `onConflict` and `orderingKey` before any I/O, and adds the store's
 * context headers (`hook`). Pure; both engines call it.
 */
export function resolveJobExtras(o: JobExtrasInput, hook: EnqueueHeadersHook | null = null): JobExtras {
  // Left out means "no headers"; null is a wrong type like every other null option (SPEC §3).
  if (o.headers === null) throw new InvalidArgument('headers', 'must be an object of string values, got null');
  const uniqueKey = o.uniqueKey === undefined ? null : validateKey('uniqueKey', o.uniqueKey);
  let replace = false;
  if (o.onConflict !== undefined) {
    if (o.onConflict !== 'keep' && o.onConflict !== 'replace')
      throw new InvalidArgument('onConflict', `must be 'keep' or 'replace', got ${JSON.stringify(o.onConflict)}`);
    if (uniqueKey === null) throw new InvalidArgument('onConflict', 'needs a uniqueKey');
    replace = o.onConflict === 'replace';
  }
  const orderingKey = o.orderingKey === undefined ? null : validateKey('orderingKey', o.orderingKey);
  // The envelope's fields win over same-named caller headers: they are the typed form of the same values.
  const headers = o.envelope === undefined ? o.headers : mergeEnvelope(o.headers, envelopeHeaders(o.envelope));
  return { headersText: encodeWithContext(headers, hook), uniqueKey, replace, orderingKey };
}

function mergeEnvelope(headers: JobHeaders | undefined, envelope: Record<string, string>): JobHeaders {
  if (headers === undefined || headers === null) return envelope;
  // A malformed `headers` is left for encodeHeaders to name.
  if (typeof headers !== 'object' || Array.isArray(headers)) return headers;
  return { ...headers, ...envelope };
}

/** The items of `enqueueBulk`: an array (at most 10 000) of `{ payload, opts? }` objects; `InvalidArgument` naming the item. */
export function bulkItems<T extends { payload: unknown; opts?: object }>(jobs: unknown): readonly T[] {
  const list = requireArray<T>('jobs', jobs);
  list.forEach((j, i) => {
    if (j === null || typeof j !== 'object' || Array.isArray(j) || !('payload' in j))
      throw new InvalidArgument(`jobs[${i}]`, 'must be an object { payload, opts? }');
    optionalObject(`jobs[${i}].opts`, j.opts);
  });
  return list;
}
