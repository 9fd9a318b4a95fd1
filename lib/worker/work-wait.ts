import type { Queue, StoreLogger, WakeReceiver } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';

// The claim loop's wait: the queue's wakes, kicks from freed slots and settled outcomes, and the poll.

/** An abortable wait for work, woken by the queue's commits (`queue.listen()`) and by kicks, never by an AbortSignal per wait. */
export class WorkWait {
  private wakes: WakeReceiver | null = null;
  private waiter: ((woken: boolean) => void) | null = null;
  private wakePending = false;
  private kickScheduled = false;

  constructor(
    private readonly queue: Queue,
    private readonly name: string,
    private readonly logger: StoreLogger,
    private readonly idlePollIntervalMs: number,
  ) {}

  /** Starts listening for the queue's wakes; a queue that cannot listen leaves the worker polling. */
  open(): void {
    this.wakePending = false;
    try {
      const wakes = this.queue.listen();
      this.wakes = wakes;
      void this.receive(wakes);
    } catch (err) {
      this.wakes = null;
      this.logger.warn(
        `${this.name}: cannot listen for commits on queue ${JSON.stringify(this.queue.name)} (${errorText(err)}); polling only`,
      );
    }
  }

  close(): void {
    this.wakes?.close();
    this.wakes = null;
    this.waiter = null;
  }

  /** Turns the queue's wakes into a flag and a resolved wait. */
  private async receive(wakes: WakeReceiver): Promise<void> {
    try {
      for (;;) {
        if ((await wakes.recv()) === null) return;
        const w = this.waiter;
        if (w) w(true);
        else this.wakePending = true;
      }
    } catch (err) {
      this.logger.warn(
        `${this.name}: stopped listening for wakes of queue ${JSON.stringify(this.queue.name)} (${errorText(err)}); ` +
          `polling every ${this.idlePollIntervalMs} ms`,
      );
    }
  }

  /**
   * Resolves true when the queue's wake ended the wait (a commit on the queue), false on a kick, after `ms`
   * or at once while `stopping` (a wake that came meanwhile still counts).
   */
  wait(ms: number, stopping: boolean): Promise<boolean> {
    if (this.wakePending) {
      this.wakePending = false;
      return Promise.resolve(true);
    }
    if (stopping) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), ms);
      const done = (woken: boolean): void => {
        clearTimeout(timer);
        if (this.waiter === done) this.waiter = null;
        resolve(woken);
      };
      this.waiter = done;
    });
  }

  /** Ends the current wait (not woken). */
  kick(): void {
    this.waiter?.(false);
  }

  /** Kicks the waiting claim loop once per event-loop turn, however many events asked for it. */
  scheduleKick(): void {
    if (this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      this.kick();
    });
  }
}
