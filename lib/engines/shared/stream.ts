import { encodePayload } from '../../contract/codec.js';
import { streamWakeChannel } from '../../contract/names.js';
import type { EventReceiver, Stream, StreamEvent, WakeReceiver } from '../../contract/types.js';
import { limitInput, requireOffset, validateKey } from '../../contract/validate.js';
import { StreamSubscription, type SubscriptionSource } from '../../internal/event-receiver.js';

/** The stream statements of one engine. Arguments arrive validated and payloads encoded. */
export interface StreamDriver {
  /** Rejects with `Closed` once the store is closed. */
  guard(): void;
  /** Largest payload JSON in UTF-8 bytes (the `maxPayloadBytes` store option). */
  readonly maxPayloadBytes: number;
  /** Appends one event (JSON text) and wakes the stream's channel on commit; resolves to its offset. */
  publish(stream: string, key: string | null, payloadText: string): Promise<number>;
  readSince(stream: string, after: number, limit: number): Promise<StreamEvent[]>;
  /** `readSince` from the consumer's saved offset (0 when none). */
  readFromConsumer(stream: string, consumer: string, limit: number): Promise<StreamEvent[]>;
  /** The saved offset, 0 when none. */
  getOffset(stream: string, consumer: string): Promise<number>;
  /** Monotone checkpoint: true only when the stored offset rose. */
  saveOffset(stream: string, consumer: string, offset: number): Promise<boolean>;
  /** Deletes events at or below `horizon`; resolves to how many. */
  trimTo(stream: string, horizon: number): Promise<number>;
  /** A receiver on an engine channel (no name validation). */
  listen(channel: string): WakeReceiver;
  /** A poll fallback in ms while wakes can be missed (PostgreSQL without LISTEN), else undefined. */
  readonly pollFallbackMs: number | undefined;
}

/** A stream handle on either engine; the name is validated by the store. */
export class StoreStream implements Stream, SubscriptionSource {
  constructor(
    private readonly driver: StreamDriver,
    readonly name: string,
  ) {}

  get pollFallbackMs(): number | undefined {
    return this.driver.pollFallbackMs;
  }

  async publish(payload: unknown): Promise<number> {
    this.driver.guard();
    return this.driver.publish(this.name, null, encodePayload(payload, 'payload', this.driver.maxPayloadBytes));
  }

  async publishWithKey(key: string, payload: unknown): Promise<number> {
    this.driver.guard();
    const k = validateKey('key', key);
    return this.driver.publish(this.name, k, encodePayload(payload, 'payload', this.driver.maxPayloadBytes));
  }

  async readSince(offset: number, limit?: number): Promise<StreamEvent[]> {
    this.driver.guard();
    return this.driver.readSince(this.name, requireOffset('offset', offset), limitInput(limit));
  }

  async readFromConsumer(consumer: string, limit?: number): Promise<StreamEvent[]> {
    this.driver.guard();
    const c = validateKey('consumer', consumer);
    return this.driver.readFromConsumer(this.name, c, limitInput(limit));
  }

  subscribe(consumer: string): EventReceiver {
    this.driver.guard();
    return new StreamSubscription(this.name, validateKey('consumer', consumer), this);
  }

  async saveOffset(consumer: string, offset: number): Promise<boolean> {
    this.driver.guard();
    const c = validateKey('consumer', consumer);
    return this.driver.saveOffset(this.name, c, requireOffset('offset', offset));
  }

  async getOffset(consumer: string): Promise<number> {
    this.driver.guard();
    return this.driver.getOffset(this.name, validateKey('consumer', consumer));
  }

  async trimTo(horizon: number): Promise<number> {
    this.driver.guard();
    return this.driver.trimTo(this.name, requireOffset('horizon', horizon));
  }

  /** Wakes on commits that may have added events to this stream (the subscription's source). */
  listen(): WakeReceiver {
    return this.driver.listen(streamWakeChannel(this.name));
  }
}
