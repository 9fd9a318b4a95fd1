// Per-key concurrency, per-key rate limits and global concurrency (SPEC §11; docs/limits.md).
import { InvalidArgument, InvalidOption } from './errors.js';
import { resolveRateLimit } from './queue-settings.js';
import type { RateLimit } from './types.js';
import { optionalKey, requireInt, validateKey } from './validate.js';

const MAX_INT32 = 2 ** 31 - 1;
/** Segments a key path may have after `payload`. */
const MAX_PATH_SEGMENTS = 8;
const PATH = /^payload(\.[^.]+)+$/;

/**
 * Where a job's key comes from when its enqueue does not name one: a path into the payload
 * (`'payload.tenantId'`, `'payload.order.customer'`; the value must be a string) or a function of
 * the payload returning a string. Resolved once at enqueue and stored on the job: a function never
 * runs in the database, so the key a claim counts is the one the enqueue wrote.
 */
export type KeySource = `payload.${string}` | ((payload: unknown) => string);

/**
 * The limits of a queue, stored in its settings row so they hold across every process
 * (`queue.setLimits`). Each field: a value sets it, `null` removes it, absent leaves it as it is.
 */
export interface QueueLimits {
  /** At most this many jobs of one `concurrencyKey` processing at once; integer in 1..2^31-1. Removed (or never set): 1. */
  readonly concurrencyLimit?: number | null;
  /** At most this many jobs of the queue processing at once, keyed or not; integer in 1..2^31-1, or null for none. */
  readonly globalConcurrency?: number | null;
  /** At most `max` claims of one `rateLimitKey` in any window of `perMs` (fixed windows aligned to the epoch); null for none. */
  readonly keyRateLimit?: RateLimit | null;
}

/** Limits as a driver writes them: `undefined` leaves a field as stored. */
export interface ResolvedLimits {
  readonly concurrencyLimit: number | null | undefined;
  readonly globalConcurrency: number | null | undefined;
  readonly keyRateLimit: RateLimit | null | undefined;
}

/** The keys a job carries for the claim's limits, in storage form. */
export interface LimitKeys {
  concurrencyKey: string | null;
  rateLimitKey: string | null;
}

/** Per-key concurrency when a queue has not set `concurrencyLimit`: a mutex per key. */
export const DEFAULT_CONCURRENCY_LIMIT = 1;

function limitInt(field: string, v: unknown): number | null | undefined {
  if (v === undefined || v === null) return v;
  return requireInt(field, v, 1, MAX_INT32);
}

/** Validates `queue.setLimits` input: {@link InvalidArgument} naming the field, before any I/O. */
export function resolveLimits(limits: unknown): ResolvedLimits {
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
    throw new InvalidArgument(
      'limits',
      `must be an object { concurrencyLimit?, globalConcurrency?, keyRateLimit? }, got ` +
        `${limits === null ? 'null' : Array.isArray(limits) ? 'an array' : typeof limits}`,
    );
  }
  const l = limits as Record<string, unknown>;
  for (const k of Object.keys(l)) {
    if (k !== 'concurrencyLimit' && k !== 'globalConcurrency' && k !== 'keyRateLimit') {
      throw new InvalidArgument(`limits.${k}`, 'is not a limit (concurrencyLimit, globalConcurrency, keyRateLimit)');
    }
  }
  return {
    concurrencyLimit: limitInt('limits.concurrencyLimit', l.concurrencyLimit),
    globalConcurrency: limitInt('limits.globalConcurrency', l.globalConcurrency),
    keyRateLimit:
      l.keyRateLimit === undefined ? undefined : relabel(() => resolveRateLimit(l.keyRateLimit as RateLimit | null)),
  };
}

// resolveRateLimit names `rateLimit.*`; here the field is `limits.keyRateLimit.*`.
function relabel<T>(f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof InvalidArgument)
      throw new InvalidArgument(`limits.key${e.argument.charAt(0).toUpperCase()}${e.argument.slice(1)}`, e.problem);
    throw e;
  }
}

function resolveKeySource(field: string, v: unknown): KeySource | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'function') return v as KeySource;
  if (typeof v === 'string' && PATH.test(v) && v.split('.').length - 1 <= MAX_PATH_SEGMENTS) return v as KeySource;
  throw new InvalidOption(
    field,
    `must be a path 'payload.<field>[.<field>…]' (at most ${MAX_PATH_SEGMENTS} fields) or a function ` +
      `(payload) => string, got ${typeof v === 'string' ? JSON.stringify(v) : typeof v}`,
  );
}

/** The explicit keys of an enqueue's options, validated (`InvalidName` naming the kind). */
export function explicitLimitKeys(o: { concurrencyKey?: unknown; rateLimitKey?: unknown }): LimitKeys {
  return {
    concurrencyKey: optionalKey('concurrencyKey', o.concurrencyKey) ?? null,
    rateLimitKey: optionalKey('rateLimitKey', o.rateLimitKey) ?? null,
  };
}

/**
 * A key from its source and the payload, before any I/O: {@link InvalidArgument} naming the field
 * when the path is missing or not a string, or the function throws or returns a non-string;
 * then validated as a key (`InvalidName`).
 */
export function keyFromSource(
  field: 'concurrencyKey' | 'rateLimitKey',
  source: KeySource,
  payload: unknown,
  at = 'payload',
): string {
  let v: unknown;
  if (typeof source === 'function') {
    try {
      v = source(payload);
    } catch (e) {
      throw new InvalidArgument(field, `function threw for ${at}: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (typeof v !== 'string')
      throw new InvalidArgument(
        field,
        `function must return a string for ${at}, got ${v === null ? 'null' : typeof v}`,
      );
  } else {
    v = payload;
    for (const seg of source.split('.').slice(1)) {
      v =
        typeof v === 'object' && v !== null && !Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, seg)
          ? (v as Record<string, unknown>)[seg]
          : undefined;
      if (v === undefined) break;
    }
    if (v === undefined) throw new InvalidArgument(field, `path ${JSON.stringify(source)} not found in ${at}`);
    if (typeof v !== 'string')
      throw new InvalidArgument(
        field,
        `path ${JSON.stringify(source)} must hold a string in ${at}, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`,
      );
  }
  return validateKey(field, v);
}

/** A queue's key sources (the queue option `limitKeys`): each absent one gives no key. */
export interface KeySources {
  readonly concurrencyKey?: KeySource;
  readonly rateLimitKey?: KeySource;
}

/** Validates the queue option `limitKeys` ({@link InvalidOption} naming the field); null when absent. */
export function resolveKeySources(v: unknown): KeySources | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new InvalidOption(
      'limitKeys',
      `must be { concurrencyKey?, rateLimitKey? }, got ${Array.isArray(v) ? 'an array' : typeof v}`,
    );
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (k !== 'concurrencyKey' && k !== 'rateLimitKey')
      throw new InvalidOption(`limitKeys.${k}`, 'is not a key source (concurrencyKey, rateLimitKey)');
  const ck = resolveKeySource('limitKeys.concurrencyKey', o.concurrencyKey);
  const rk = resolveKeySource('limitKeys.rateLimitKey', o.rateLimitKey);
  return Object.freeze({
    ...(ck === null ? {} : { concurrencyKey: ck }),
    ...(rk === null ? {} : { rateLimitKey: rk }),
  });
}

/**
 * A job's limit keys: the enqueue's explicit ones win; otherwise the queue's sources applied to
 * the payload. Pure; both engines' handles call it before any I/O.
 */
export function withSourcedKeys<S extends LimitKeys>(
  stamp: S,
  sources: KeySources | null,
  payload: unknown,
  at = 'payload',
): S {
  if (sources === null) return stamp;
  const ck = sources.concurrencyKey;
  const rk = sources.rateLimitKey;
  if ((ck === undefined || stamp.concurrencyKey !== null) && (rk === undefined || stamp.rateLimitKey !== null))
    return stamp;
  return {
    ...stamp,
    concurrencyKey:
      stamp.concurrencyKey ?? (ck === undefined ? null : keyFromSource('concurrencyKey', ck, payload, at)),
    rateLimitKey: stamp.rateLimitKey ?? (rk === undefined ? null : keyFromSource('rateLimitKey', rk, payload, at)),
  };
}

/** Whether a stamp carries a limit key (such jobs take the engines' limited enqueue and are never handed off locally). */
export function hasLimitKey(k: LimitKeys): boolean {
  return k.concurrencyKey !== null || k.rateLimitKey !== null;
}
