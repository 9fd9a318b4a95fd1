import { performance } from 'node:perf_hooks';
import type { Job, Queue } from '../contract/types.js';
import { handoffPoint, type HandoffSlot } from '../internal/handoff.js';
import { remoteHandoffPoint } from '../internal/remote-handoff.js';

// Local hand-off: while idle, the worker takes this store's fresh enqueues straight from the enqueue
// (inserted already claimed by it), so no claim statement runs (see lib/internal/handoff.ts). Where the
// store offers it (PostgreSQL), it also keeps one handler slot offered to the enqueues of other processes
// (cross-process hand-off, lib/internal/remote-handoff.ts), withdrawn before its next claim.

/** What the hand-off taker needs from the worker core. */
export interface HandoffHost {
  readonly queue: Queue;
  readonly workerId: string;
  /** The lease hand-offs are inserted with (null: the queue's visibility timeout). */
  readonly leaseMs: number | null;
  /** Shutdown began: no more registering. */
  stopping(): boolean;
  /** A handler slot is free now for one more job that starts at once (`reserved` slots are already promised). */
  mayReserve(reserved: number): boolean;
  /**
   * A job arrived claimed by this worker, its lease timed from `claimStarted` (performance.now()). Returns a
   * promise when the worker gives it back instead (it began stopping meanwhile): the drain waits for it.
   */
  delivered(job: Job, claimStarted: number): Promise<void> | null;
  /** Something the drain waits on changed. */
  changed(): void;
  /** A promised slot went unused (the job went pending): the claim loop may claim for it. */
  slotFreed(): void;
}

/** Registers the worker as an idle hand-off taker and keeps count of the slots promised to enqueues in flight. */
export class HandoffTaker {
  /** Hand-off slots reserved and not yet delivered or cancelled (each holds a handler slot). */
  reserved = 0;
  /** Unregisters this worker as an idle hand-off taker; null while not registered. */
  private off: (() => void) | null = null;
  /** Releases of hand-offs that arrived after stop began (the drain waits for them). */
  private readonly releases = new Set<Promise<void>>();
  /** Withdraws the slot offered to other processes; null while none is offered. */
  private withdrawRemote: (() => Promise<void>) | null = null;
  /** Withdrawals under way (each resolves once its slot settled). */
  private readonly withdrawals = new Set<Promise<void>>();

  constructor(
    private readonly host: HandoffHost,
    private readonly enabled: boolean,
  ) {}

  /** Idle (a short claim, free slots): fresh enqueues of this store may come straight here. */
  join(): void {
    if (!this.enabled || this.host.stopping()) return;
    if (!this.off) {
      const point = handoffPoint(this.host.queue);
      if (point) this.off = point.register({ reserve: () => this.reserve() });
    }
    this.offerRemote();
  }

  /** Claiming or stopping: hand-offs would race the claim for the same slots. The remote slot's withdrawal begins ({@link withdrawn}). */
  leave(): void {
    const off = this.off;
    this.off = null;
    off?.();
    const withdraw = this.withdrawRemote;
    this.withdrawRemote = null;
    if (withdraw) {
      const p = withdraw().finally(() => this.withdrawals.delete(p));
      this.withdrawals.add(p);
    }
  }

  /** Resolves once every slot offered to other processes has settled (delivered or cancelled) after {@link leave}. */
  withdrawn(): Promise<unknown> | null {
    return this.withdrawals.size === 0 ? null : Promise.all(this.withdrawals);
  }

  /** A handler slot may have come free while idle: offer it to other processes again when none is offered. */
  refill(): void {
    if (this.off !== null) this.offerRemote();
  }

  /** Offers one handler slot to the enqueues of other processes, when the store can and a slot is free. */
  private offerRemote(): void {
    if (this.withdrawRemote !== null || this.off === null) return;
    const point = remoteHandoffPoint(handoffPoint(this.host.queue));
    if (point === null) return;
    const slot = this.reserve();
    if (slot === null) return;
    let settled = false;
    const withdraw = point.offer({
      workerId: slot.workerId,
      leaseMs: slot.leaseMs,
      deliver: (job) => {
        settled = true;
        if (this.withdrawRemote === withdraw) this.withdrawRemote = null;
        slot.deliver(job);
        // Still idle: offer the next free slot.
        this.refill();
      },
      cancel: () => {
        settled = true;
        if (this.withdrawRemote === withdraw) this.withdrawRemote = null;
        slot.cancel();
      },
    });
    if (!settled) this.withdrawRemote = withdraw;
  }

  /** Resolves when the hand-offs given back after stop began have been released. */
  released(): Promise<unknown> {
    return Promise.all(this.releases);
  }

  /** One handler slot for a job in flight from an enqueue of this store, or null when none is free now. */
  private reserve(): HandoffSlot | null {
    const host = this.host;
    if (this.off === null || !host.mayReserve(this.reserved)) return null;
    this.reserved += 1;
    const claimStarted = performance.now();
    let done = false;
    const settle = (): boolean => {
      if (done) return false;
      done = true;
      this.reserved -= 1;
      return true;
    };
    return {
      workerId: host.workerId,
      leaseMs: host.leaseMs,
      deliver: (job) => {
        if (!settle()) return;
        const giveBack = host.delivered(job, claimStarted);
        if (giveBack) {
          const p = giveBack.finally(() => this.releases.delete(p));
          this.releases.add(p);
        }
        host.changed();
      },
      cancel: () => {
        if (!settle()) return;
        host.changed();
        // The job went pending and woke us: a wake taken while this slot was held found no free slot.
        host.slotFreed();
      },
    };
  }
}
