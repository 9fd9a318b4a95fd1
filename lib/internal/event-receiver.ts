import { optionalSignal } from '../contract/validate.js';
import { Closed } from '../contract/errors.js';
import { abortAfter } from './sleep.js';
import type { EventReceiver, StreamEvent, WakeReceiver } from '../contract/types.js';

/** What a stream subscription needs from its engine. */
export interface SubscriptionSource {
  readSince(offset: number, limit: number): Promise<StreamEvent[]>;
  getOffset(consumer: string): Promise<number>;
  saveOffset(consumer: string, offset: number): Promise<boolean>;
  /** Wakes on commits that may have added events to this stream. */
  listen(): WakeReceiver;
  /** A poll fallback in ms when wakes can be missed (PostgreSQL without LISTEN); undefined for none. */
  readonly pollFallbackMs?: number;
}

/**
 * Engine-agnostic subscription: starts after the saved offset, reads in
 * batches in offset order, and waits on the stream's wake when caught up.
 * The wake receiver is opened before the first read, so no commit between
 * the read and the wait is missed.
 */
export class StreamSubscription implements EventReceiver {
  private position: number | null = null;
  private buffer: StreamEvent[] = [];
  private readonly wakes: WakeReceiver;
  private readonly stop = new AbortController();
  closed = false;

  constructor(
    readonly stream: string,
    readonly consumer: string,
    private readonly source: SubscriptionSource,
    private readonly batchSize = 256,
  ) {
    this.wakes = source.listen();
  }

  async next(signal?: AbortSignal): Promise<StreamEvent | null> {
    optionalSignal('signal', signal);
    for (;;) {
      if (this.ended() || signal?.aborted) return null;
      const buffered = this.buffer.shift();
      if (buffered) {
        this.position = buffered.offset;
        return buffered;
      }
      let events: StreamEvent[];
      try {
        if (this.position === null) this.position = await this.source.getOffset(this.consumer);
        events = await this.source.readSince(this.position, this.batchSize);
      } catch (err) {
        // The store closed between the check above and the read: that is the end, not an error.
        if (!(err instanceof Closed)) throw err;
        this.close();
        return null;
      }
      if (this.closed) return null;
      if (events.length > 0) {
        this.buffer = events;
        continue;
      }
      await this.waitForWake(signal);
    }
  }

  saveOffset(offset: number): Promise<boolean> {
    if (this.closed) return Promise.reject(new Closed('subscription'));
    return this.source.saveOffset(this.consumer, offset);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stop.abort();
    this.wakes.close();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    for (;;) {
      const e = await this.next();
      if (e === null) return;
      yield e;
    }
  }

  /**
   * Closed by the caller, or by the engine: a store's close closes every wake receiver, so a
   * subscription whose receiver is closed belongs to a closed store and ends (the interface:
   * `next()` is null once closed), read-ahead events included.
   */
  private ended(): boolean {
    if (!this.closed && this.wakes.closed) this.close();
    return this.closed;
  }

  private async waitForWake(signal?: AbortSignal): Promise<void> {
    const signals = [this.stop.signal];
    if (signal) signals.push(signal);
    // abortAfter, not AbortSignal.any: the receiver's stop signal would keep every wait's composite (see abortAfter).
    const timed = abortAfter(this.source.pollFallbackMs ?? null, ...signals);
    const wake = await this.wakes.recv(timed.signal).finally(timed.clear);
    // The engine closed the wake receiver (watcher death, store close): end the subscription too.
    if (wake === null && this.wakes.closed) this.close();
  }
}
