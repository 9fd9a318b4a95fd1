import type { JsonPayload } from '../contract/codec.js';
import type { QueueOpts } from '../contract/options.js';
import type { Job, Outbox, Queue } from '../contract/types.js';

/**
 * A queue name that carries its payload type, made by {@link defineQueue}.
 * Pass it where a queue name goes (`@QueueHandler`, `@InjectQueue`,
 * `forRoot({ queues })`): the handler's `Job<T>` and the injected
 * `Queue<T>` then agree at compile time.
 */
export interface QueueRef<T = unknown> {
  readonly kind: 'queue';
  readonly name: string;
  /** Options registered for the queue when the module provides its handle. */
  readonly opts?: QueueOpts;
  /** Type-level only: never set at runtime. */
  readonly __payload?: T;
}

/** An outbox name that carries its payload type, made by {@link defineOutbox}. */
export interface OutboxRef<T = unknown> {
  readonly kind: 'outbox';
  readonly name: string;
  readonly opts?: QueueOpts;
  /** Type-level only: never set at runtime. */
  readonly __payload?: T;
}

/**
 * Empty when `T` is JSON-compatible; otherwise one required argument no caller can give, so the call
 * fails to compile ("Expected 1-2 arguments" names this parameter) where the type argument is written.
 */
type NotJson<T> = [T] extends [JsonPayload<T>]
  ? []
  : [
      payloadTypeIsNotJson: 'a Date, Map, Set, BigInt or function in T would be refused at run time (Codec): use plain JSON values',
    ];

/**
 * Names a queue whose jobs carry `T` payloads: `const EMAILS = defineQueue<Email>('emails')`. `T` must be
 * JSON-compatible ({@link JsonPayload}): a `Date`, `Map` or `Set` field is a compile error.
 */
export function defineQueue<T>(name: string, opts?: QueueOpts, ...notJson: NotJson<T>): QueueRef<T> {
  void notJson;
  return Object.freeze(opts === undefined ? { kind: 'queue', name } : { kind: 'queue', name, opts });
}

/**
 * Names an outbox whose messages carry `T` payloads: `const ORDER_CREATED = defineOutbox<OrderCreated>('order-created')`.
 * `T` must be JSON-compatible, as for {@link defineQueue}.
 */
export function defineOutbox<T>(name: string, opts?: QueueOpts, ...notJson: NotJson<T>): OutboxRef<T> {
  void notJson;
  return Object.freeze(opts === undefined ? { kind: 'outbox', name } : { kind: 'outbox', name, opts });
}

/** The payload type a {@link QueueRef} or {@link OutboxRef} carries. */
export type PayloadOf<R> = R extends QueueRef<infer T> ? T : R extends OutboxRef<infer T> ? T : never;
/** The handle type `@InjectQueue(ref)` provides: `QueueOf<typeof EMAILS>` is `Queue<Email>`. */
export type QueueOf<R extends QueueRef<unknown>> = Queue<PayloadOf<R>>;
/** The handle type `@InjectOutbox(ref)` provides. */
export type OutboxOf<R extends OutboxRef<unknown>> = Outbox<PayloadOf<R>>;
/** The job a handler of `ref` receives. */
export type JobOf<R extends QueueRef<unknown> | OutboxRef<unknown>> = Job<PayloadOf<R>>;
