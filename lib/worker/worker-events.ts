import { InvalidArgument } from '../contract/errors.js';
import type { Job, StoreLogger } from '../contract/types.js';
import { requireFunction } from '../contract/validate.js';
import type { DeadReason, WorkerObserver } from './worker-observer.js';

/** The lifecycle events of a worker and their listener arguments. */
export interface WorkerEventMap {
  /** The handler resolved for `job` (its ack is written right after, batched). */
  completed: [job: Job, durationMs: number];
  /** The handler threw or timed out; `retried` or `dead` follows once the outcome is written. */
  failed: [job: Job, error: unknown];
  /** The failed job is back to pending with a backoff. */
  retried: [job: Job, error: unknown];
  /** The job was dead-lettered (`permanent`: `PermanentError`; `exhausted`: attempts ran out). */
  dead: [job: Job, error: unknown, reason: DeadReason];
  /** The worker lost the claim of `job` (null: a fenced ack in a batch); it may run again elsewhere. */
  'lease-lost': [job: Job | null];
  /** A claim found the queue empty after the worker had run jobs. */
  drained: [];
}

/** One of {@link WorkerEventMap}'s names. */
export type WorkerEventName = keyof WorkerEventMap;

/** The event names, for validation. */
export const WORKER_EVENT_NAMES: readonly WorkerEventName[] = [
  'completed',
  'failed',
  'retried',
  'dead',
  'lease-lost',
  'drained',
];

/** A listener; a returned promise is awaited only to log its rejection. */
export type WorkerEventListener<E extends WorkerEventName> = (...args: WorkerEventMap[E]) => unknown;

/**
 * Lifecycle events of one worker, as a {@link WorkerObserver}: pass it in a
 * worker's `observers` and subscribe with `on`. Listeners run synchronously
 * on the worker's path (an async listener is not awaited); a throw or
 * rejection is logged, never propagated.
 */
export class WorkerEvents implements WorkerObserver {
  private readonly listeners = new Map<WorkerEventName, WorkerEventListener<never>[]>();

  constructor(
    private readonly logger: StoreLogger,
    private readonly name: string,
  ) {}

  /**
   * Adds a listener of `event`.
   * @throws InvalidArgument (a `RangeError`, code `INVALID_ARGUMENT`) naming `event` when it is not one of
   *   {@link WORKER_EVENT_NAMES}, or `listener` when it is not a function; nothing is registered then.
   */
  on<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
    if (!WORKER_EVENT_NAMES.includes(event)) {
      throw new InvalidArgument(
        'event',
        `must be one of ${WORKER_EVENT_NAMES.join(', ')}, got ${typeof event === 'string' ? 'an unknown name' : typeof event}`,
      );
    }
    requireFunction('listener', listener);
    const list = this.listeners.get(event) ?? [];
    list.push(listener as WorkerEventListener<never>);
    this.listeners.set(event, list);
    return this;
  }

  /** Removes a listener added with `on`. */
  off<E extends WorkerEventName>(event: E, listener: WorkerEventListener<E>): this {
    const list = this.listeners.get(event);
    if (list)
      this.listeners.set(
        event,
        list.filter((l) => l !== listener),
      );
    return this;
  }

  /** True when at least one listener is registered. */
  get listening(): boolean {
    for (const list of this.listeners.values()) if (list.length > 0) return true;
    return false;
  }

  private emit<E extends WorkerEventName>(event: E, ...args: WorkerEventMap[E]): void {
    const list = this.listeners.get(event);
    if (!list) return;
    for (const l of list) {
      try {
        const r = (l as (...a: WorkerEventMap[E]) => unknown)(...args);
        if (r instanceof Promise)
          r.catch((err: unknown) => this.logger.error(`${this.name}: a ${event} listener failed`, err));
      } catch (err) {
        this.logger.error(`${this.name}: a ${event} listener failed`, err);
      }
    }
  }

  completed(job: Job, durationMs: number): void {
    this.emit('completed', job, durationMs);
  }
  failed(job: Job, error: unknown): void {
    this.emit('failed', job, error);
  }
  retried(job: Job, _reason: unknown, error: unknown): void {
    this.emit('retried', job, error);
  }
  dead(job: Job, reason: DeadReason, error: unknown): void {
    this.emit('dead', job, error, reason);
  }
  leaseLost(job: Job | null): void {
    this.emit('lease-lost', job);
  }
  drained(): void {
    this.emit('drained');
  }
}
