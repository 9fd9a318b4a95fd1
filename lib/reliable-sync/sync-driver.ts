import { backoffDelayMs } from '../contract/backoff.js';
import { Closed } from '../contract/errors.js';
import { sleep } from '../internal/sleep.js';
import { optionalObject, optionalSignal, requireCount, requireFunction, requireTimerMs } from '../contract/validate.js';
import type { ReliableOutbox } from './reliable-outbox.js';

/** How a {@link SyncDriver} reaches the peer. */
export interface SyncTransport {
  /**
   * Sends one frame. Resolving means "handed to the wire", not "acknowledged":
   * acknowledgments arrive separately through {@link SyncDriver.onAck}. A
   * rejection makes the driver retry the same frame after a backoff.
   * `signal` aborts when the driver stops.
   */
  send(epoch: number, frame: Uint8Array, signal: AbortSignal): Promise<void>;
}

/** Options of {@link SyncDriver}. */
export interface SyncDriverOptions {
  /** Most frames sent and not yet acknowledged at once (default 16; 1 means stop-and-wait). */
  window?: number;
  /** Base of the equal-jitter exponential backoff after a failed send (ms, default 500). */
  retryDelayMs?: number;
  /** Cap of that backoff (ms, default 30 000). */
  maxRetryDelayMs?: number;
  /** Stops the driver when it aborts (like {@link SyncDriver.stop}). */
  signal?: AbortSignal;
  /** Told about each failed send before the retry (default: ignored). */
  onSendError?: (error: unknown, epoch: number) => void;
}

/**
 * Sends a {@link ReliableOutbox}'s frames to a peer and applies its
 * acknowledgments. On {@link start} it replays every unacknowledged frame
 * from the store (redelivery after a restart), then sends frames as they are
 * appended, lowest epoch first, keeping at most `window` frames in flight
 * (sent, not yet acknowledged). Frames stay in the outbox until acknowledged,
 * so a stop or a crash loses nothing: the next start sends them again.
 */
export class SyncDriver {
  private readonly controller = new AbortController();
  private readonly window: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  /** Epochs sent (or being sent) and not yet acknowledged. */
  private readonly inFlight = new Set<number>();
  private wakeFlag = false;
  private wakeResolve: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private readonly removeAbortListener: () => void;

  /**
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming what is wrong: `outbox.<method>`
   *   when `outbox` is not a {@link ReliableOutbox}, `transport.send`, `SyncDriver options`, `window`,
   *   `retryDelayMs`, `maxRetryDelayMs`, `signal` or `onSendError`.
   */
  constructor(
    /** The outbox this driver sends from. */
    readonly outbox: ReliableOutbox,
    private readonly transport: SyncTransport,
    private readonly options: SyncDriverOptions = {},
  ) {
    for (const m of ['append', 'ackThrough', 'replayFrom', 'firstPending'] as const)
      requireFunction(`outbox.${m}`, (outbox as Partial<ReliableOutbox> | null)?.[m]);
    optionalObject('SyncDriver options', options);
    requireFunction('transport.send', (transport as Partial<SyncTransport> | null)?.send);
    this.window = options.window === undefined ? 16 : requireCount('window', options.window, 10_000);
    this.retryDelayMs =
      options.retryDelayMs === undefined ? 500 : requireTimerMs('retryDelayMs', options.retryDelayMs, 0);
    this.maxRetryDelayMs =
      options.maxRetryDelayMs === undefined ? 30_000 : requireTimerMs('maxRetryDelayMs', options.maxRetryDelayMs, 0);
    if (options.onSendError !== undefined) requireFunction('onSendError', options.onSendError);
    const external = optionalSignal('signal', options.signal);
    const onAbort = (): void => this.controller.abort();
    external?.addEventListener('abort', onAbort, { once: true });
    this.removeAbortListener = () => external?.removeEventListener('abort', onAbort);
    if (external?.aborted) this.controller.abort();
    this.controller.signal.addEventListener('abort', () => this.wake(), { once: true });
  }

  /** True once stopped or aborted. */
  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  /** Epochs sent and not yet acknowledged, ascending. */
  inFlightEpochs(): number[] {
    return [...this.inFlight].sort((a, b) => a - b);
  }

  /** Replays the unacknowledged frames from the store, then starts sending. Resolves once sending has begun. */
  async start(): Promise<void> {
    if (this.stopped) throw new Closed('sync driver');
    if (this.loop) return;
    await this.outbox.replayFrom();
    if (this.stopped || this.loop) return;
    this.loop = this.run();
  }

  /** Appends a frame to the outbox (durably, before any send) and wakes the sender. See {@link ReliableOutbox.append}. */
  async append(epoch: number, frame: Uint8Array): Promise<boolean> {
    const written = await this.outbox.append(epoch, frame);
    this.wake();
    return written;
  }

  /** Applies the peer's acknowledgment of every epoch through `epoch`; resolves the effective cursor. */
  async onAck(epoch: number): Promise<number> {
    const cursor = await this.outbox.ackThrough(epoch);
    for (const e of this.inFlight) if (e <= cursor) this.inFlight.delete(e);
    this.wake();
    return cursor;
  }

  /**
   * Forgets what is in flight so every unacknowledged frame is sent again,
   * e.g. after the transport reconnected and the peer may have missed frames.
   */
  resend(): void {
    this.inFlight.clear();
    this.wake();
  }

  /** Stops sending and waits for the loop to finish; the outbox keeps every unacknowledged frame. */
  async stop(): Promise<void> {
    this.controller.abort();
    this.wake();
    this.removeAbortListener();
    await this.loop;
  }

  private wake(): void {
    this.wakeFlag = true;
    this.wakeResolve?.();
  }

  private async waitForWake(): Promise<void> {
    if (!this.wakeFlag) {
      await new Promise<void>((resolve) => {
        this.wakeResolve = resolve;
      });
      this.wakeResolve = null;
    }
    this.wakeFlag = false;
  }

  private nextToSend(): { epoch: number; frame: Uint8Array } | undefined {
    // An ack applied straight on the outbox (not through onAck) must not hold window slots.
    for (const e of this.inFlight) if (e <= this.outbox.cursor) this.inFlight.delete(e);
    if (this.inFlight.size >= this.window) return undefined;
    // At most `window` epochs are in flight, so the next one to send is among the lowest window + 1.
    return this.outbox.firstPending(this.inFlight.size + 1).find((r) => !this.inFlight.has(r.epoch));
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    let failures = 0;
    while (!signal.aborted) {
      const next = this.nextToSend();
      if (!next) {
        await this.waitForWake();
        continue;
      }
      // Marked before sending: an ack may arrive before send() resolves.
      this.inFlight.add(next.epoch);
      try {
        await this.transport.send(next.epoch, next.frame, signal);
        failures = 0;
        if (next.epoch <= this.outbox.cursor) this.inFlight.delete(next.epoch);
      } catch (err) {
        this.inFlight.delete(next.epoch);
        if (signal.aborted) break;
        failures += 1;
        try {
          this.options.onSendError?.(err, next.epoch);
        } catch {
          // A throwing observer must not end the loop: the frame still needs delivering.
        }
        await sleep(Math.min(backoffDelayMs(failures, this.retryDelayMs), this.maxRetryDelayMs), signal);
      }
    }
  }
}
