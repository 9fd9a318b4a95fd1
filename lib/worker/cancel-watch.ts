import { JobCancelled } from '../contract/errors.js';
import type { Queue, StoreLogger, WakeReceiver } from '../contract/types.js';
import { errorText } from '../internal/outbox-handle.js';
import { abortAfter } from '../internal/sleep.js';
import type { Tracked } from './tracked.js';

// Cancel of a running job from any process (SPEC §11): the queue's cancel wake (sent on the commit of a
// cancel that ended a processing job) makes the worker ask which of its running jobs were cancelled,
// and their handlers' signals abort. No query per claim: one per wake, and one per poll interval while
// handlers run (the bound when a wake is lost).

/** What the watch needs of the worker core. */
export interface CancelWatchHost {
  readonly queue: Queue;
  readonly name: string;
  readonly logger: StoreLogger;
  /** How often to check while handlers run, without a wake (ms). */
  readonly pollMs: number;
  /** The worker's tracked jobs (those `running` are checked). */
  tracked(): Iterable<Tracked>;
  /** `t` was cancelled: abort its handler (its outcome is already recorded). */
  cancelled(t: Tracked, reason: JobCancelled): void;
}

/** Listens for the queue's cancel wakes while the worker runs and aborts the handlers of cancelled jobs. */
export class CancelWatch {
  private wakes: WakeReceiver | null = null;
  private stop: AbortController | null = null;
  private loop: Promise<void> | null = null;

  constructor(private readonly host: CancelWatchHost) {}

  start(): void {
    if (this.loop) return;
    const h = this.host;
    try {
      this.wakes = h.queue.listenCancels();
    } catch (err) {
      this.wakes = null;
      h.logger.warn(
        `${h.name}: cannot listen for cancels on queue ${JSON.stringify(h.queue.name)} (${errorText(err)}); checking every ${h.pollMs} ms`,
      );
    }
    this.stop = new AbortController();
    this.loop = this.run(this.stop.signal);
  }

  async close(): Promise<void> {
    this.stop?.abort();
    this.wakes?.close();
    await this.loop;
    this.loop = null;
    this.wakes = null;
  }

  private running(): Tracked[] {
    const out: Tracked[] = [];
    for (const t of this.host.tracked()) if (t.state === 'running' && !t.cancelled) out.push(t);
    return out;
  }

  private async run(stop: AbortSignal): Promise<void> {
    const h = this.host;
    while (!stop.aborted) {
      // A wake, or the poll bound (a query only while handlers run). abortAfter's timer owns its source:
      // an AbortSignal.timeout inside AbortSignal.any can be collected and never fire.
      const timed = abortAfter(h.pollMs, stop);
      try {
        if (this.wakes) await this.wakes.recv(timed.signal);
        else await sleepUntil(timed.signal);
      } finally {
        timed.clear();
      }
      if (stop.aborted) return;
      if (this.wakes?.closed) this.wakes = null;
      const running = this.running();
      if (running.length === 0) continue;
      let ids: number[];
      try {
        ids = await h.queue.cancelledAmong(running.map((t) => t.job.id));
      } catch (err) {
        if (!stop.aborted)
          h.logger.warn(
            `${h.name}: checking for cancelled jobs failed (${errorText(err)}); trying again in ${h.pollMs} ms`,
          );
        continue;
      }
      if (ids.length === 0) continue;
      const hit = new Set(ids);
      for (const t of running) if (hit.has(t.job.id) && !t.cancelled) h.cancelled(t, new JobCancelled(t.job.id));
    }
  }
}

function sleepUntil(signal: AbortSignal): Promise<null> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(null);
    signal.addEventListener('abort', () => resolve(null), { once: true });
  });
}
