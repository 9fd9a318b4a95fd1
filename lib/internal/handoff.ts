import { hasLimitKey } from '../contract/limits.js';
import type { JobWrite } from '../contract/options.js';
import type { Job, Queue } from '../contract/types.js';

/**
 * Local hand-off ("enqueue straight into a waiting worker"), internal to the
 * package: a worker idle on a queue registers as a {@link HandoffTaker} with
 * the queue handle's store; a plain autocommit `queue.enqueue` of that store
 * reserves a slot of one such taker synchronously, inserts the job already
 * claimed by it (same statement / write transaction, which also checks that
 * the queue is neither paused nor rate-limited), and gives the claimed `Job`
 * straight to the worker: no claim statement, no wake. When the store decides
 * against it (settings, clock), the job is inserted pending as usual and the
 * slot is cancelled. docs/semantics.md, Queues ("Local hand-off").
 */
export const HANDOFF: unique symbol = Symbol('alkstore.handoff');

/** A slot reserved in one idle worker for one job in flight. Exactly one of `deliver` and `cancel` is called, once. */
export interface HandoffSlot {
  /** The claim's worker id. */
  readonly workerId: string;
  /** The claim's lease (ms); null = the job's stamped visibility timeout. */
  readonly leaseMs: number | null;
  /** The job was inserted claimed by this slot's worker, and that commit has resolved. */
  deliver(job: Job): void;
  /** No job for this slot (inserted pending, or the write failed). */
  cancel(): void;
}

/** An idle worker that can take a freshly enqueued job. */
export interface HandoffTaker {
  /** Reserves one slot synchronously, or null when the worker cannot take a job now. */
  reserve(): HandoffSlot | null;
}

/** What a queue handle offers under {@link HANDOFF}: where an idle worker registers. */
export interface HandoffPoint {
  /** Registers `taker` for this queue of this store until the returned function is called. */
  register(taker: HandoffTaker): () => void;
  /**
   * A slot of one idle worker of this queue of this store, or null: for a write of this package that
   * inserts a job claimed by that worker itself (a workflow run's first pass, see lib/workflows).
   */
  reserve(): HandoffSlot | null;
}

/** The hand-off point of a queue handle, or null (another implementation, a wrapper hiding it, or `localHandoff: false`). */
export function handoffPoint(queue: Queue): HandoffPoint | null {
  const p = (queue as { [HANDOFF]?: unknown })[HANDOFF];
  return p !== null && typeof p === 'object' && typeof (p as HandoffPoint).register === 'function'
    ? (p as HandoffPoint)
    : null;
}

/** The idle takers of one store, by queue name. */
export class HandoffRegistry {
  private readonly byQueue = new Map<string, Set<HandoffTaker>>();

  /** The point a handle of `queue` exposes. */
  point(queue: string): HandoffPoint {
    return { register: (taker) => this.register(queue, taker), reserve: () => this.reserve(queue) };
  }

  register(queue: string, taker: HandoffTaker): () => void {
    let set = this.byQueue.get(queue);
    if (!set) {
      set = new Set();
      this.byQueue.set(queue, set);
    }
    set.add(taker);
    return () => {
      const s = this.byQueue.get(queue);
      if (!s) return;
      s.delete(taker);
      if (s.size === 0) this.byQueue.delete(queue);
    };
  }

  /** Whether any worker is registered on `queue` (the cheap check before resolving a hand-off). */
  has(queue: string): boolean {
    return this.byQueue.has(queue);
  }

  /**
   * A slot of one idle taker of `queue`, or null. Takers are tried in turn; the one that
   * gives a slot moves to the back, so several idle workers share the hand-offs.
   */
  reserve(queue: string): HandoffSlot | null {
    const set = this.byQueue.get(queue);
    if (!set) return null;
    for (const taker of set) {
      const slot = taker.reserve();
      if (slot) {
        set.delete(taker);
        set.add(taker);
        return slot;
      }
    }
    return null;
  }
}

/**
 * Whether a job may be handed off at all: no unique or ordering key, and due now by this
 * process's clock (the engine's statement checks the database clock again).
 */
export function handoffCandidate(stamp: JobWrite): boolean {
  if (stamp.uniqueKey !== null || stamp.orderingKey !== null || hasLimitKey(stamp)) return false;
  if (stamp.delayMs !== null) return stamp.delayMs <= 0;
  return stamp.runAtMs === null || stamp.runAtMs <= Date.now();
}
