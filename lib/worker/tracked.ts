import type { Job, Queue } from '../contract/types.js';
import type { FailureOutcome } from './worker-options.js';

// The worker core's record of one claimed job, shared by the buffer, the lease renewal and the outcome writer.

/** Where a claimed job is: waiting in the buffer, in a handler, its outcome being written, waiting to rewrite it, let go. */
export type TrackedState = 'buffered' | 'running' | 'recording' | 'unrecorded' | 'finished';

/** A claimed job this worker is responsible for until its outcome lands or it lets go. */
export interface Tracked {
  readonly job: Job;
  state: TrackedState;
  abort: AbortController | null;
  /** The outcome to write (null: ack). */
  outcome: FailureOutcome | null;
  /** performance.now() of the first failed outcome write. */
  failingSince: number | null;
  leaseLost: boolean;
  /** Cancelled from some process while it ran: its outcome is recorded already, nothing is written for it. */
  cancelled: boolean;
  /** The single handler's return value, acked as the job's result (`keepResults`). */
  result: unknown;
  renewing: boolean;
  readonly leaseMs: number;
  /** performance.now(): buffered jobs are released here; in-flight ones renewed. */
  dueAt: number;
  /** performance.now() when its (single, timed) handler call started; -1: not timed. */
  startedAt: number;
}

/** A fresh record of `job`, claimed at `claimStarted` (performance.now()) for `leaseMs`: due at half its lease. */
export function trackedJob(job: Job, leaseMs: number, claimStarted: number): Tracked {
  return { job, state: 'buffered', abort: null, outcome: null, failingSince: null, leaseLost: false, cancelled: false, result: undefined, renewing: false, leaseMs, dueAt: claimStarted + leaseMs / 2, startedAt: -1 };
}

/**
 * The lease the claim of `job` granted (`job.leaseMs`; a `Job` of another implementation without it:
 * the queue's visibility timeout). A duration, timed on this worker's monotonic clock: the claim's
 * `deadline` is a database instant and is never compared with this process's clock (SPEC §11).
 */
export function grantedLease(job: Job, queue: Queue): number {
  const ms = (job as { leaseMs?: unknown }).leaseMs;
  if (typeof ms === 'number' && Number.isFinite(ms) && ms > 0) return ms;
  return Math.max(1, queue.opts?.leaseMs ?? 1);
}
