import { Codec, PayloadTooLarge } from './errors.js';

/** A JSON value as stored and returned by queues, streams and outboxes. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * The type a payload of type `T` comes back as: its JSON shape. A `toJSON`
 * value (a `Date`) becomes what `toJSON` returns (`string`), functions and
 * symbols disappear, `Map`/`Set` become `{}`. `unknown` stays `unknown`.
 * alkstore refuses non-plain objects at the call (see {@link encodePayload}),
 * so a `T` that needs this mapping to change is a hint to send a plain shape.
 */
export type Jsonified<T> = T extends string | number | boolean | null
  ? T
  : T extends { toJSON(...args: never[]): infer R }
    ? Jsonified<R>
    : T extends bigint | symbol | undefined | ((...args: never[]) => unknown)
      ? never
      : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
        ? Record<string, never>
        : T extends readonly unknown[]
          ? { -readonly [K in keyof T]: Jsonified<T[K]> }
          : T extends object
            ? { [K in keyof T as T[K] extends symbol | ((...args: never[]) => unknown) ? never : K]: Jsonified<T[K]> }
            : T; // only `unknown` gets here: it stays `unknown`

/**
 * `T` itself when every value in it survives JSON as sent, else `T` with the offending fields as
 * `never`, so `defineQueue<T>()` and `defineOutbox<T>()` refuse at compile time what the store refuses
 * at run time (a `Codec` error): a `Date`, `Map`, `Set`, `BigInt`, function or symbol anywhere in `T`.
 * An optional field (`a?: string`) is fine: `{ a: undefined }` is sent as `{}`, JSON's own rule.
 * `-0` is a number and is accepted; it comes back as `0`. `unknown` stays `unknown` (checked at run
 * time only). Class instances with only plain fields cannot be told from plain objects by their type:
 * the run-time check refuses them.
 */
export type JsonPayload<T> = unknown extends T ? T : JsonPayloadOf<T>;

type JsonPayloadOf<T> = T extends string | number | boolean | null
  ? T
  : T extends
        Date | ReadonlyMap<unknown, unknown> | ReadonlySet<unknown> | bigint | symbol | ((...args: never[]) => unknown)
    ? never
    : T extends readonly unknown[]
      ? { [K in keyof T]: JsonPayloadOf<T[K]> }
      : T extends object
        ? {
            [K in keyof T]: undefined extends T[K]
              ? JsonPayloadOf<Exclude<T[K], undefined>> | undefined
              : JsonPayloadOf<T[K]>;
          }
        : never;

/**
 * The default largest encoded payload, in UTF-8 bytes of its JSON text: 1 MiB
 * (the `maxPayloadBytes` store option). It matches the default message limit
 * of NATS (`max_payload`) and sits well above what a job needs, so an outbox
 * message that passes it is publishable as is, while a runaway payload (a
 * whole file, a result set) is refused before it bloats every claim.
 */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;

/**
 * Deepest nesting of arrays and objects a payload may have (the top-level value is depth 1).
 * Far beyond any message, and far below where a recursive encoder or validator (JSON.stringify,
 * class-transformer, PostgreSQL's json parser) runs out of stack, so the limit is the same
 * everywhere instead of depending on the caller's stack.
 */
export const MAX_PAYLOAD_DEPTH = 256;

const TOO_DEEP = `is nested more than ${MAX_PAYLOAD_DEPTH} levels deep (arrays and objects); flatten it`;

/** The largest `maxPayloadBytes` a store accepts (1 GiB, PostgreSQL's limit for one text value). */
export const MAX_PAYLOAD_BYTES_LIMIT = 1_073_741_824;

type Path = (string | number)[];

/** A running lower bound of the encoded size, against the limit. */
interface SizeBound {
  atLeast: number;
  readonly max: number;
}

const TOO_LARGE = 'too large';

function pathText(what: string, path: Path): string {
  let out = what;
  for (const p of path)
    out += typeof p === 'number' ? `[${p}]` : /^[A-Za-z_$][\w$]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`;
  return out;
}

/** Why a non-plain object does not survive JSON, and what to send instead. */
function nonPlainReason(v: object): string {
  if (v instanceof Date)
    return 'a Date does not survive JSON (it comes back as a string); send date.toISOString() or date.getTime()';
  if (v instanceof Map)
    return 'a Map does not survive JSON (it comes back as {}); send Object.fromEntries(map) or [...map]';
  if (v instanceof Set) return 'a Set does not survive JSON (it comes back as {}); send [...set]';
  if (typeof Buffer !== 'undefined' && Buffer.isBuffer(v))
    return "a Buffer does not survive JSON (it comes back as { type: 'Buffer', data }); send buf.toString('base64')";
  if (ArrayBuffer.isView(v) || v instanceof ArrayBuffer) {
    return 'binary data does not survive JSON (a typed array comes back as an object of indices); send it base64-encoded or as Array.from(bytes)';
  }
  const ctor = (Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)?.constructor;
  const name = typeof ctor?.name === 'string' && ctor.name.length > 0 ? ctor.name : 'a class';
  return `an instance of ${name} does not survive JSON (it comes back as a plain object without its prototype); send a plain object`;
}

/**
 * Whether {@link findUnsafe} would find nothing, without the bookkeeping that names a path: the
 * common case of a plain payload walks once with no allocation. A cycle shows here as nesting past
 * {@link MAX_PAYLOAD_DEPTH}; any false answer is explained by `findUnsafe`, which runs only then.
 */
function isPlainJson(v: unknown, depth: number, size: SizeBound): boolean {
  switch (typeof v) {
    case 'string':
      size.atLeast += v.length;
      return size.atLeast <= size.max;
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object':
      break;
    default:
      return false;
  }
  if (v === null) return true;
  if (depth >= MAX_PAYLOAD_DEPTH) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  if (Array.isArray(v)) {
    if (proto !== Array.prototype) return false;
    for (let i = 0; i < v.length; i++) if (!isPlainJson(v[i], depth + 1, size)) return false;
    return true;
  }
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key of Object.keys(v)) {
    const child = (v as Record<string, unknown>)[key];
    if (child === undefined) continue;
    size.atLeast += key.length;
    if (!isPlainJson(child, depth + 1, size)) return false;
  }
  return true;
}

/**
 * The first value under `v` that JSON would lose or refuse, as `[path, reason]`, or null.
 * Recursion stops at {@link MAX_PAYLOAD_DEPTH}, so no payload can exhaust the stack here.
 */
function findUnsafe(v: unknown, path: Path, stack: Set<object>, size: SizeBound): [Path, string] | null {
  switch (typeof v) {
    case 'string':
      // A string's JSON is at least as many UTF-8 bytes as it has UTF-16 units: stop before encoding a runaway payload.
      size.atLeast += v.length;
      return size.atLeast > size.max ? [[], TOO_LARGE] : null;
    case 'boolean':
      return null;
    case 'number':
      return Number.isFinite(v) ? null : [[...path], `the number ${v} does not survive JSON`];
    case 'bigint':
      return [[...path], 'a BigInt does not survive JSON; send it as a string'];
    case 'undefined':
      return [
        [...path],
        path.length === 0 ? 'undefined at the top does not survive JSON' : 'undefined in an array comes back as null',
      ];
    case 'function':
    case 'symbol':
      return [[...path], `a ${typeof v} does not survive JSON`];
  }
  if (v === null) return null;
  const obj = v as object;
  if (stack.has(obj)) return [[...path], 'a cycle does not survive JSON'];
  // `stack` holds the objects above this one: this object is at depth stack.size + 1.
  if (stack.size >= MAX_PAYLOAD_DEPTH) return [[], TOO_DEEP];
  const proto = Object.getPrototypeOf(obj) as unknown;
  stack.add(obj);
  try {
    if (Array.isArray(obj) && proto === Array.prototype) {
      for (let i = 0; i < obj.length; i++) {
        path.push(i);
        const bad = findUnsafe(obj[i], path, stack, size);
        path.pop();
        if (bad) return bad;
      }
      return null;
    }
    if (proto !== Object.prototype && proto !== null) return [[...path], nonPlainReason(obj)];
    for (const key of Object.keys(obj)) {
      const child = (obj as Record<string, unknown>)[key];
      if (child === undefined) continue; // a nested undefined property is dropped, as JSON does
      path.push(key);
      size.atLeast += key.length;
      const bad = findUnsafe(child, path, stack, size);
      path.pop();
      if (bad) return bad;
    }
    return null;
  } finally {
    stack.delete(obj);
  }
}

/**
 * Encodes a payload as JSON text, refusing with {@link Codec} (naming the path
 * of the offending value, e.g. `payload.items[2].at`) anything that would not
 * come back as it was sent (SPEC §2): BigInt, cycles, non-finite numbers,
 * functions, symbols, `undefined` at the top or in an array, non-plain
 * objects (`Date`, `Map`, `Set`, `Buffer` and typed arrays, class instances),
 * and nesting deeper than {@link MAX_PAYLOAD_DEPTH}.
 * Nested `undefined` object properties are dropped, as JSON does; `-0` is
 * accepted and comes back as `0` (equal under `===`). Text over `maxBytes`
 * UTF-8 bytes is {@link PayloadTooLarge}. Nothing is written before this runs.
 */
export function encodePayload(value: unknown, what = 'payload', maxBytes: number = DEFAULT_MAX_PAYLOAD_BYTES): string {
  if (!isPlainJson(value, 0, { atLeast: 0, max: maxBytes })) {
    const size: SizeBound = { atLeast: 0, max: maxBytes };
    const bad = findUnsafe(value, [], new Set(), size);
    if (bad?.[1] === TOO_LARGE) throw PayloadTooLarge.atLeast(what, size.atLeast, maxBytes);
    if (bad) throw new Codec(pathText(what, bad[0]), bad[1]);
  }
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new Codec(what, `does not survive JSON (${err instanceof Error ? err.message : String(err)})`, {
      cause: err,
    });
  }
  // A UTF-16 code unit is at most 3 UTF-8 bytes: count bytes only when the text could be over.
  if (text.length * 3 > maxBytes) {
    const bytes = utf8Length(text);
    if (bytes > maxBytes) throw PayloadTooLarge.payload(what, bytes, maxBytes);
  }
  return text;
}

/** Decodes stored JSON text; a corrupt value is a {@link Codec} error. */
export function decodePayload(text: string, what = 'stored payload'): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Codec(what, 'is not valid JSON', { cause: err });
  }
}

/** Byte length of a string in UTF-8. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
