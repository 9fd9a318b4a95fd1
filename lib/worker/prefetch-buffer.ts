import { performance } from 'node:perf_hooks';
import type { Tracked } from './tracked.js';

// The prefetch buffer: claimed jobs waiting (FIFO) for a free handler slot, each given back at half its lease.

/** What the buffer needs from the worker core. */
export interface PrefetchBufferHost {
  /** True while a handler slot is free. */
  hasFreeSlot(): boolean;
  /** Shutdown began: nothing more is started and the expiry timer stops. */
  stopping(): boolean;
  /** Runs a buffered job in a free slot. */
  start(t: Tracked): void;
  /** Buffered jobs reached their release point before a slot freed (the prefetch outruns the handlers): give them back. */
  expired(late: Tracked[]): void;
  /** Expired jobs left the buffer while the timer ran: the claim loop may have room again. */
  slotFreed(): void;
}

/**
 * Claimed jobs beyond the free slots, started in claim order as slots free. A job that waited half its
 * lease (its `dueAt`) is given back (`host.expired`) instead of being started late; one timer sits at the
 * earliest release point.
 */
export class PrefetchBuffer {
  private items: Tracked[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = 0;

  constructor(private readonly host: PrefetchBufferHost) {}

  get length(): number {
    return this.items.length;
  }

  push(t: Tracked): void {
    this.items.push(t);
  }

  /** Moves buffered jobs into free slots; one past its release point is given back instead of started late. */
  startReady(): void {
    const host = this.host;
    if (host.stopping()) return;
    let late: Tracked[] | null = null;
    const now = performance.now();
    while (this.items.length > 0 && host.hasFreeSlot()) {
      const next = this.items.shift()!;
      if (now >= next.dueAt) (late ??= []).push(next);
      else host.start(next);
    }
    if (late) host.expired(late);
    this.scheduleExpiry();
  }

  /** Empties the buffer (shutdown): the caller releases what it returns. */
  takeAll(): Tracked[] {
    const all = this.items.splice(0);
    this.scheduleExpiry();
    return all;
  }

  clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Keeps one timer at the earliest release point of the buffer. */
  private scheduleExpiry(): void {
    if (this.items.length === 0 || this.host.stopping()) {
      this.clearTimer();
      return;
    }
    let first = Infinity;
    for (const b of this.items) first = Math.min(first, b.dueAt);
    // A timer due no later than the first release point stays (it re-plans when it fires).
    if (this.timer && this.timerAt <= first) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = first;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        const now = performance.now();
        const late = this.items.filter((b) => now >= b.dueAt);
        if (late.length > 0) {
          this.items = this.items.filter((b) => now < b.dueAt);
          this.host.expired(late);
          this.host.slotFreed();
        }
        this.scheduleExpiry();
      },
      Math.max(0, first - performance.now()),
    );
  }
}
