// Durable streams (SPEC §6).
import type { Jsonified } from '../codec.js';

/** A durable stream event (SPEC §6). Offsets are per stream, immutable, ascending. */
export interface StreamEvent<T = unknown> {
  readonly offset: number;
  readonly stream: string;
  readonly key: string | null;
  /** The payload as it comes back: the JSON shape of what was sent ({@link Jsonified}). */
  readonly payload: Jsonified<T>;
  /** Epoch milliseconds at publish (database clock). Informational, not an ordering field. */
  readonly createdAt: number;
}

/**
 * A durable subscription: replays events after the consumer's saved offset,
 * then follows live events. Offsets are saved explicitly only.
 */
export interface EventReceiver<T = unknown> extends AsyncIterable<StreamEvent<T>> {
  readonly stream: string;
  readonly consumer: string;
  /** Next event in offset order, or `null` once closed (or `signal` aborts). */
  next(signal?: AbortSignal): Promise<StreamEvent<T> | null>;
  /** Saves the consumer offset (monotone: a lower save is a no-op returning false). */
  saveOffset(offset: number): Promise<boolean>;
  close(): void;
  readonly closed: boolean;
}

/** A durable, per-consumer-offset log. */
export interface Stream {
  readonly name: string;
  /** Appends an event; resolves to its offset. */
  publish(payload: unknown): Promise<number>;
  /** Appends an event carrying `key` (non-empty; metadata only, ordering stays global by offset). */
  publishWithKey(key: string, payload: unknown): Promise<number>;
  /** Events with offset > `offset`, ascending, at most `limit` (default 1000). After a trim, resumes at the first remaining row. */
  readSince(offset: number, limit?: number): Promise<StreamEvent[]>;
  /** Events after the consumer's saved offset. */
  readFromConsumer(consumer: string, limit?: number): Promise<StreamEvent[]>;
  /** Replays from the consumer's saved offset, then follows live events without polling delay. */
  subscribe(consumer: string): EventReceiver;
  /** Monotone checkpoint; resolves `false` (no-op) when `offset` is not above the saved one. */
  saveOffset(consumer: string, offset: number): Promise<boolean>;
  /** The consumer's saved offset, 0 when none. */
  getOffset(consumer: string): Promise<number>;
  /** Deletes events with offset <= horizon; resolves to the number deleted. Emits no wake. */
  trimTo(horizon: number): Promise<number>;
}
