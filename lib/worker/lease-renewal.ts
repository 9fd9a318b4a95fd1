import { performance } from 'node:perf_hooks';
import { withTimeout } from './timers.js';
import type { Tracked } from './tracked.js';

// Lease renewal: every claim in flight is heartbeated every half lease, timed on performance.now() from the claim.

/** What lease renewal needs from the worker core. */
export interface LeaseRenewalHost {
  /** Every job the worker holds (buffered, finished and lost ones are skipped). */
  tracked(): Iterable<Tracked>;
  /** The drain gave up: no more renewals are scheduled. */
  stopped(): boolean;
  readonly storeTimeoutMs: number;
  /** A heartbeat changed nothing: the claim lapsed and the job may run elsewhere. */
  loseLease(t: Tracked): void;
  /** A heartbeat failed (not a verdict: the next round may still land before the deadline). */
  storeError(operation: string, err: unknown): void;
}

/**
 * One timer at the earliest renewal point (`Tracked.dueAt`) of the claims in flight. Each renewal extends
 * the job's lease by the `leaseMs` its claim granted (`job.heartbeat(leaseMs)`), on a fixed schedule from
 * the claim's send, so one slow round does not delay the next; the database's `deadline` is never compared
 * with this process's clock.
 */
export class LeaseRenewal {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerAt = 0;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly host: LeaseRenewalHost) {}

  /** Makes sure a renewal round runs no later than `at` (performance.now()). */
  schedule(at: number): void {
    if (this.host.stopped()) return;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.renewDue(), Math.max(0, at - performance.now()));
  }

  clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Resolves when the heartbeats in flight have settled. */
  settled(): Promise<unknown> {
    return Promise.all(this.inFlight);
  }

  private renewDue(): void {
    this.timer = null;
    const now = performance.now();
    let next = Infinity;
    for (const t of this.host.tracked()) {
      if (t.state === 'buffered' || t.state === 'finished' || t.leaseLost) continue;
      if (now >= t.dueAt) {
        // A fixed schedule: one slow round does not delay the next.
        t.dueAt += t.halfLease;
        if (t.dueAt <= now) t.dueAt = Math.floor(now) + t.halfLease;
        if (!t.renewing) {
          const p = this.renew(t).finally(() => this.inFlight.delete(p));
          this.inFlight.add(p);
        }
      }
      next = Math.min(next, t.dueAt);
    }
    if (next < Infinity) this.schedule(next);
  }

  private async renew(t: Tracked): Promise<void> {
    t.renewing = true;
    try {
      const ok = await withTimeout(t.job.heartbeat(t.leaseMs), this.host.storeTimeoutMs, 'heartbeat');
      // A write in flight decides for itself.
      if (ok || t.state === 'finished' || t.state === 'recording') return;
      this.host.loseLease(t);
    } catch (err) {
      // Not a verdict: the next round may still land before the deadline.
      if (!this.host.stopped()) this.host.storeError(`renewing the lease of job ${t.job.id}`, err);
    } finally {
      t.renewing = false;
    }
  }
}
