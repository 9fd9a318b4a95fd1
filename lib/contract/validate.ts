/**
 * The one validation layer (SPEC §3, §4). Every public entry point of both
 * engines, the transaction handles, the outbox dispatcher, the Nest module
 * options and reliable sync check their inputs here, before any I/O, so a bad
 * input is refused the same way everywhere and nothing is written. Engines
 * add no checks of their own.
 *
 * - Names (channels, streams, queues, outboxes, locks, schedules) and keys
 *   (stream key, consumer, owner, worker id, uniqueKey, orderingKey):
 *   {@link InvalidName} / {@link ReservedName}.
 * - Numbers, arrays, functions, signals and per-call option objects:
 *   {@link InvalidArgument} (a `RangeError`, code `INVALID_ARGUMENT`).
 * - Configuration objects (store, dispatcher, module options) use
 *   {@link InvalidOption} with the same bounds, via {@link asOption}.
 */
import { renamedOption } from './renamed-option.js';
import { DEFAULT_MAX_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES_LIMIT } from './codec.js';
import { InvalidArgument, InvalidName, InvalidOption, ReservedName } from './errors.js';

/** The reserved prefix of every engine-owned name. Case-sensitive. */
export const RESERVED_PREFIX = '__alkstore_';
/**
 * Engine-derived queue names that internal code (the workflows, `__alkstore_workflows:<namespace>`)
 * registered in this process: `validateName('queue', …)` lets exactly these through. Not exported
 * from the package.
 */
export const INTERNAL_QUEUES = new Set<string>();
/** Longest name, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 255;
/** Longest key (stream key, consumer, owner, worker id, uniqueKey, orderingKey), in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024;
/** The largest instant a `Date` can hold (epoch ms); durations and now + a duration stay within it. */
export const MAX_INSTANT_MS = 8.64e15;
/** Largest batch size or read limit. */
export const MAX_BATCH = 10_000;
/** Longest delay a Node timer honours; a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
/** Bounds of `priority` (int32). */
export const MIN_PRIORITY = -(2 ** 31);
export const MAX_PRIORITY = 2 ** 31 - 1;
/** Largest `maxAttempts`. */
export const MAX_ATTEMPTS = 2 ** 31 - 1;

/** Name kinds in the shared (reserved-prefix) namespace. */
export type NameKind = 'channel' | 'stream' | 'queue' | 'outbox' | 'lock' | 'schedule' | 'inbox';

/** Kinds of free-form keys: not in the reserved namespace, at most {@link MAX_KEY_BYTES}. */
export type KeyKind =
  'key' | 'consumer' | 'owner' | 'worker' | 'uniqueKey' | 'orderingKey' | 'outbox key' | (string & {});

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function wellFormed(kind: string, value: unknown, maxBytes: number): string {
  if (typeof value !== 'string') throw new InvalidName(kind, value, `must be a string, got ${typeName(value)}`);
  if (value.trim().length === 0) throw new InvalidName(kind, value, 'must be a non-empty string (not blank)');
  if (value.includes('\u0000')) throw new InvalidName(kind, value, 'must not contain NUL (U+0000)');
  if (LONE_SURROGATE.test(value)) throw new InvalidName(kind, value, 'must be well-formed UTF-16 (no lone surrogate)');
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > maxBytes) throw new InvalidName(kind, value, `must be at most ${maxBytes} UTF-8 bytes, got ${bytes}`);
  return value;
}

/**
 * A consumer-supplied name (SPEC §4): a string that is not blank, has no NUL
 * and no lone surrogate, is at most 255 UTF-8 bytes ({@link InvalidName}) and
 * does not start with `__alkstore_` ({@link ReservedName}).
 */
export function validateName(kind: NameKind, name: unknown): string {
  const n = wellFormed(kind, name, MAX_NAME_BYTES);
  if (n.startsWith(RESERVED_PREFIX) && !(kind === 'queue' && INTERNAL_QUEUES.has(n))) throw new ReservedName(kind, n);
  return n;
}

/**
 * A name as stored, engine-derived (`__alkstore_…`) names included: for read
 * paths that may look at the engine's own rows (the admin API's `lock`). Same
 * rules as {@link validateName} except the reserved prefix.
 */
export function validateStoredName(kind: NameKind, name: unknown): string {
  return wellFormed(kind, name, MAX_NAME_BYTES);
}

/** A free-form key (SPEC §4): like a name, but at most 1024 bytes and never reserved. */
export function validateKey(kind: KeyKind, value: unknown): string {
  return wellFormed(kind, value, MAX_KEY_BYTES);
}

/** An optional key: `undefined` passes through. */
export function optionalKey(kind: KeyKind, value: unknown): string | undefined {
  return value === undefined ? undefined : validateKey(kind, value);
}

// ── numbers ─────────────────────────────────────────────────────────────

/** What kind of value was given, never the value itself (it could be a secret pasted into the wrong field). */
function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return 'NaN';
    if (!Number.isFinite(v)) return v > 0 ? 'Infinity' : '-Infinity';
    return Number.isInteger(v) ? 'an integer out of range' : 'a fraction';
  }
  if (typeof v === 'bigint') return 'a bigint';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'undefined') return 'undefined';
  return `a ${typeof v}`;
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && !Number.isNaN(v);
}

/** An integer in `[min, max]`. */
export function requireInt(argument: string, v: unknown, min: number, max: number): number {
  if (!isNumber(v) || !Number.isInteger(v) || v < min || v > max) {
    throw new InvalidArgument(argument, `must be an integer in [${min}, ${max}], got ${typeName(v)}`);
  }
  return v;
}

function outOfRange(v: unknown): string {
  return typeof v === 'number' && Number.isFinite(v) ? 'a number out of range' : typeName(v);
}

/** Longest duration whose end (now + duration) is still a valid instant. Uses the local clock: checks run before any I/O. */
function maxDurationMs(): number {
  return MAX_INSTANT_MS - Math.max(0, Date.now());
}

/**
 * A duration in ms: finite, `> 0` (or `>= 0` with `allowZero`), and now + it
 * at most 8.64e15. Fractions round up for positive durations (a lease of
 * 0.5 ms is 1 ms) and down for non-negative ones (a delay of 0.5 ms is 0).
 */
export function requireDurationMs(argument: string, v: unknown, opts: { allowZero?: boolean } = {}): number {
  const max = maxDurationMs();
  const lo = opts.allowZero ? '[0' : '(0';
  if (!isNumber(v) || !Number.isFinite(v) || v < 0 || (!opts.allowZero && v === 0) || v > max) {
    throw new InvalidArgument(
      argument,
      `must be a duration in ms in ${lo}, ${MAX_INSTANT_MS} - now], got ${outOfRange(v)}`,
    );
  }
  return opts.allowZero ? Math.floor(v) : Math.ceil(v);
}

/** An instant in epoch ms within the range of `Date` (±8.64e15), floored. */
export function requireInstantMs(argument: string, v: unknown): number {
  if (!isNumber(v) || !Number.isFinite(v) || Math.abs(v) > MAX_INSTANT_MS) {
    throw new InvalidArgument(
      argument,
      `must be an instant in epoch ms in [-${MAX_INSTANT_MS}, ${MAX_INSTANT_MS}], got ${outOfRange(v)}`,
    );
  }
  return Math.floor(v);
}

/** A batch size or read limit: an integer in 1..10 000. */
export function requireBatchSize(argument: string, v: unknown): number {
  return requireInt(argument, v, 1, MAX_BATCH);
}

/** A stream offset, trim horizon, epoch or id: a non-negative safe integer. */
export function requireOffset(argument: string, v: unknown): number {
  return requireInt(argument, v, 0, Number.MAX_SAFE_INTEGER);
}

/** A job id: a non-negative safe integer. */
export function requireJobId(argument: string, v: unknown): number {
  return requireOffset(argument, v);
}

/** A timer option (poll interval, tick, timeout) in ms: an integer in `[min, 2^31-1]` (min defaults to 1). */
export function requireTimerMs(argument: string, v: unknown, min = 1): number {
  return requireInt(argument, v, min, MAX_TIMER_MS);
}

/** `priority`: an int32. */
export function requirePriority(argument: string, v: unknown): number {
  return requireInt(argument, v, MIN_PRIORITY, MAX_PRIORITY);
}

/** `maxAttempts`: an integer in 1..2^31-1. */
export function requireMaxAttempts(argument: string, v: unknown): number {
  return requireInt(argument, v, 1, MAX_ATTEMPTS);
}

/** A positive count without a tighter bound (pool sizes, windows): a safe integer >= 1. */
export function requireCount(argument: string, v: unknown, max = Number.MAX_SAFE_INTEGER): number {
  return requireInt(argument, v, 1, max);
}

// ── other argument types ───────────────────────────────────────────────

/** An array of at most `maxLength` elements (batch calls: 10 000). */
export function requireArray<T>(argument: string, v: readonly T[] | unknown, maxLength = MAX_BATCH): readonly T[] {
  if (!Array.isArray(v)) throw new InvalidArgument(argument, `must be an array, got ${typeName(v)}`);
  if (v.length > maxLength)
    throw new InvalidArgument(argument, `must have at most ${maxLength} elements, got ${v.length}`);
  return v as readonly T[];
}

/** An optional options object: `undefined` means none; `null`, arrays and primitives are refused. */
export function optionalObject<T extends object>(argument: string, v: T | undefined | unknown): Partial<T> | undefined {
  if (v === undefined) return undefined;
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw new InvalidArgument(argument, `must be an object or undefined, got ${typeName(v)}`);
  return v as Partial<T>;
}

/** A function (handlers, random sources). */
export function requireFunction<F extends (...args: never[]) => unknown>(argument: string, v: F | unknown): F {
  if (typeof v !== 'function') throw new InvalidArgument(argument, `must be a function, got ${typeName(v)}`);
  return v as F;
}

/** An `AbortSignal` (or anything shaped like one). */
/** `store.joinTransaction(open, fn)`'s arguments, checked the same way on both engines before any I/O. */
export function joinTransactionInput(open: unknown, fn: unknown): void {
  requireFunction('open', open);
  requireFunction('fn', fn);
}

export function requireSignal(argument: string, v: unknown): AbortSignal {
  const s = v as AbortSignal | null;
  if (
    s === null ||
    typeof s !== 'object' ||
    typeof s.aborted !== 'boolean' ||
    typeof s.addEventListener !== 'function'
  ) {
    throw new InvalidArgument(argument, `must be an AbortSignal, got ${typeName(v)}`);
  }
  return s;
}

/** An optional `AbortSignal`. */
export function optionalSignal(argument: string, v: unknown): AbortSignal | undefined {
  return v === undefined ? undefined : requireSignal(argument, v);
}

/**
 * A free-form string argument that must carry text (a correlation id): a
 * string that is not blank. The message never echoes the value.
 */
export function requireNonBlankString(argument: string, v: unknown): string {
  if (typeof v !== 'string')
    throw new InvalidArgument(
      argument,
      `must be a non-empty string, got ${typeof v === 'number' ? 'a number' : typeName(v)}`,
    );
  if (v.trim().length === 0) throw new InvalidArgument(argument, 'must be a non-empty string, got a blank one');
  return v;
}

/** One draw of a random source (backoff jitter): a number in `[0, 1)`. `argument` names the source, e.g. `random`. */
export function requireRandomDraw(argument: string, v: unknown): number {
  if (!isNumber(v) || !(v >= 0 && v < 1)) {
    throw new InvalidArgument(
      argument,
      `must return a number in [0, 1), got ${typeof v === 'number' && Number.isFinite(v) ? String(v) : typeName(v)}`,
    );
  }
  return v;
}

/** A boolean option. */
export function requireBoolean(argument: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new InvalidArgument(argument, `must be a boolean, got ${typeName(v)}`);
  return v;
}

/**
 * Runs a check and reports its refusal as {@link InvalidOption} (configuration
 * objects: store, dispatcher and module options), keeping the bound text.
 */
export function asOption<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (err instanceof InvalidArgument) throw new InvalidOption(err.argument, err.problem);
    throw err;
  }
}

/** The `maxPayloadBytes` store option (both engines): an integer in 1..2^30, default 1 MiB. */
export function maxPayloadBytesOption(v: unknown): number {
  return v === undefined
    ? DEFAULT_MAX_PAYLOAD_BYTES
    : asOption(() => requireInt('maxPayloadBytes', v, 1, MAX_PAYLOAD_BYTES_LIMIT));
}

// ── composite inputs shared by both engines ─────────────────────────────

/** `claimBatch`/`claimOne` options. */
export interface ClaimInput {
  workerId: string | null;
  /** Lease of this claim, or null for the job's stamped visibility timeout. */
  leaseMs: number | null;
}

/** Validates the worker id and claim options of a claim. */
export function claimInput(workerId: unknown, opts: unknown): ClaimInput {
  const o = optionalObject<{ leaseMs?: number }>('claim opts', opts);
  const lease = o === undefined ? undefined : renamedOption('claim', o, 'visibilityTimeoutMs', 'leaseMs');
  return {
    workerId: workerId === undefined ? null : validateKey('worker', workerId),
    leaseMs: lease === undefined ? null : requireDurationMs('leaseMs', lease),
  };
}

/** `ackBatch` input: at most 10 000 `{ id, claimToken }`. */
export function ackBatchInput(jobs: unknown): { ids: number[]; tokens: string[] } {
  const list = requireArray<unknown>('jobs', jobs);
  const ids: number[] = [];
  const tokens: string[] = [];
  list.forEach((j, i) => {
    if (j === null || typeof j !== 'object')
      throw new InvalidArgument(`jobs[${i}]`, `must be a claimed job ({ id, claimToken }), got ${typeName(j)}`);
    const { id, claimToken } = j as { id?: unknown; claimToken?: unknown };
    ids.push(requireJobId(`jobs[${i}].id`, id));
    if (typeof claimToken !== 'string')
      throw new InvalidArgument(`jobs[${i}].claimToken`, `must be a string, got ${typeName(claimToken)}`);
    tokens.push(claimToken);
  });
  return { ids, tokens };
}

/** `retryDead` / `purgeDead` ids: at most 10 000 job ids. */
export function jobIdsInput(ids: unknown): number[] {
  return requireArray<unknown>('ids', ids).map((id, i) => requireJobId(`ids[${i}]`, id));
}

/** `listDead` paging. */
export interface ListDeadInput {
  before: number | null;
  after: number | null;
  limit: number;
}

export function listDeadInput(opts: unknown): ListDeadInput {
  const o = optionalObject<{ before?: number; after?: number; limit?: number }>('listDead opts', opts) ?? {};
  return {
    before: o.before === undefined ? null : requireInstantMs('before', o.before),
    after: o.after === undefined ? null : requireJobId('after', o.after),
    limit: o.limit === undefined ? 100 : requireBatchSize('limit', o.limit),
  };
}

/** A read limit with its default (streams: 1000). */
export function limitInput(limit: unknown, dflt = 1000): number {
  return limit === undefined ? dflt : requireBatchSize('limit', limit);
}

/** `runSchedules` signal and options. */
export function runSchedulesInput(
  signal: unknown,
  opts: unknown,
): { signal: AbortSignal; owner: string | undefined; maxTickMs: number } {
  const s = requireSignal('signal', signal);
  const o = optionalObject<{ owner?: string; maxTickMs?: number }>('runSchedules opts', opts) ?? {};
  return {
    signal: s,
    owner: optionalKey('owner', o.owner),
    maxTickMs: o.maxTickMs === undefined ? 1_000 : requireTimerMs('maxTickMs', o.maxTickMs),
  };
}

/** Validated `ScheduleOpts`. */
export interface ScheduleOptsInput {
  priority: number;
  maxAttempts: number | null;
  expiresInMs: number | null;
  startAt: number | null;
}

export function scheduleOptsInput(opts: unknown): ScheduleOptsInput {
  const o =
    optionalObject<{ priority?: number; maxAttempts?: number; expiresInMs?: number; startAt?: number }>(
      'schedule opts',
      opts,
    ) ?? {};
  return {
    priority: o.priority === undefined ? 0 : requirePriority('priority', o.priority),
    maxAttempts: o.maxAttempts === undefined ? null : requireMaxAttempts('maxAttempts', o.maxAttempts),
    expiresInMs: o.expiresInMs === undefined ? null : requireDurationMs('expiresInMs', o.expiresInMs),
    startAt: o.startAt === undefined ? null : requireInstantMs('startAt', o.startAt),
  };
}

const SYSTEM_SCHEMA = /^(pg_|information_schema$)/i;
const IDENT = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/**
 * A PostgreSQL schema the engine may own: a plain identifier of at most 63
 * bytes that is not a system schema (`pg_*`, `information_schema`).
 * {@link InvalidOption} naming `field`.
 */
export function validatePgSchema(field: string, schema: unknown): string {
  if (typeof schema !== 'string' || !IDENT.test(schema)) {
    throw new InvalidOption(field, 'must be an identifier (letters, digits, _ or $, not starting with a digit)');
  }
  if (Buffer.byteLength(schema, 'utf8') > 63) throw new InvalidOption(field, 'must be at most 63 bytes');
  if (SYSTEM_SCHEMA.test(schema))
    throw new InvalidOption(
      field,
      `must not be a PostgreSQL system schema (pg_* or information_schema), got ${JSON.stringify(schema)}`,
    );
  return schema;
}
