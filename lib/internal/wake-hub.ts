import { AlreadyRunning } from '../contract/errors.js';
import { optionalSignal } from '../contract/validate.js';
import type { Wake, WakeReceiver } from '../contract/types.js';

/**
 * Fans wakes out to receivers by channel. Engines feed it (SQLite from its
 * data_version watcher, PostgreSQL from its LISTEN connection). A receiver
 * holds at most one pending wake: bursts coalesce, which the contract allows.
 */
export class WakeHub {
  private readonly byChannel = new Map<string, Set<HubReceiver>>();
  private readonly allReceivers = new Set<HubReceiver>();

  /** Called when the first receiver of a channel appears / the last one goes. */
  constructor(
    private readonly onChannelAdded: (channel: string) => void = () => undefined,
    private readonly onChannelRemoved: (channel: string) => void = () => undefined,
  ) {}

  listen(channel: string): WakeReceiver {
    const r = new HubReceiver(channel, (x) => this.remove(x));
    let set = this.byChannel.get(channel);
    if (!set) {
      set = new Set();
      this.byChannel.set(channel, set);
      this.onChannelAdded(channel);
    }
    set.add(r);
    this.allReceivers.add(r);
    return r;
  }

  /** Wakes every receiver of `channel`. */
  wake(channel: string): void {
    const set = this.byChannel.get(channel);
    if (set) for (const r of set) r.push();
  }

  /** Wakes every receiver of every channel (used after a reconnect or a watcher restart). */
  wakeAll(channel?: string): void {
    for (const r of this.allReceivers) r.push(channel);
  }

  channels(): string[] {
    return [...this.byChannel.keys()];
  }

  hasListeners(channel: string): boolean {
    return this.byChannel.has(channel);
  }

  get size(): number {
    return this.allReceivers.size;
  }

  /** Closes every receiver (store close, watcher death). */
  closeAll(): void {
    for (const r of [...this.allReceivers]) r.close();
  }

  private remove(r: HubReceiver): void {
    this.allReceivers.delete(r);
    const set = this.byChannel.get(r.channel);
    if (!set) return;
    set.delete(r);
    if (set.size === 0) {
      this.byChannel.delete(r.channel);
      this.onChannelRemoved(r.channel);
    }
  }
}

class HubReceiver implements WakeReceiver {
  private pending: string | null = null;
  private waiter: ((w: Wake | null) => void) | null = null;
  closed = false;

  constructor(
    readonly channel: string,
    private readonly onClose: (r: HubReceiver) => void,
  ) {}

  push(channel: string = this.channel): void {
    if (this.closed) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w({ channel });
    } else {
      this.pending = channel;
    }
  }

  recv(signal?: AbortSignal): Promise<Wake | null> {
    try {
      optionalSignal('signal', signal);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.pending !== null) {
      const channel = this.pending;
      this.pending = null;
      return Promise.resolve({ channel });
    }
    if (this.closed || signal?.aborted) return Promise.resolve(null);
    if (this.waiter)
      return Promise.reject(new AlreadyRunning(`a recv() on channel ${JSON.stringify(this.channel)}`, 'pending'));
    return new Promise((resolve) => {
      const onAbort = (): void => {
        if (this.waiter === settle) this.waiter = null;
        resolve(null);
      };
      const settle = (w: Wake | null): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(w);
      };
      this.waiter = settle;
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.pending = null;
    const w = this.waiter;
    this.waiter = null;
    w?.(null);
    this.onClose(this);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Wake> {
    for (;;) {
      const w = await this.recv();
      if (w === null) return;
      yield w;
    }
  }
}
