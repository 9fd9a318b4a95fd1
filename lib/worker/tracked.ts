import type { Job, Queue } from '../contract/types.js';
import type { FailureOutcome } from './worker-options.js';

// The worker core's record of one claimed job, shared by the buffer, the lease renewal and the outcome writer.
// One is held per job in flight (10 000 at a time with a large concurrency), so it keeps only what every job
// needs: the state and the flags share one number, times are whole milliseconds (small integers, stored in the record
// itself rather than in a heap number of their own), and what only some jobs have (an abort controller, the
// time of a first failed write) lives in side tables keyed by the record.

/** Where a claimed job is: waiting in the buffer, in a handler, its outcome being written, waiting to rewrite it, let go. */
export type TrackedState = 'buffered' | 'running' | 'recording' | 'unrecorded' | 'finished';

const STATES: readonly TrackedState[] = ['buffered', 'running', 'recording', 'unrecorded', 'finished'];
const STATE_BITS = 7;
const LEASE_LOST = 8;
const CANCELLED = 16;
const RENEWING = 32;

function stateBits(state: TrackedState): number {
  return STATES.indexOf(state);
}

/** A claimed job this worker is responsible for until its outcome lands or it lets go. */
export class Tracked {
  /** The outcome to write (null: ack). */
  outcome: FailureOutcome | null = null;
  /** The single handler's return value, acked as the job's result (`keepResults`). */
  result: unknown = undefined;
  /** performance.now() in whole ms, never late: buffered jobs are released here; in-flight ones renewed. */
  dueAt: number;
  /** performance.now() when its (single, timed) handler call started; -1: not timed. */
  startedAt = -1;
  /** Its index in the {@link TrackedSet} that holds it; -1: none. */
  slot = -1;
  /** The state (the low bits) and the flags. */
  private flags = 0;

  /** A fresh record of `job`, claimed at `claimStarted` (performance.now()) for `leaseMs`: due at half its lease. */
  constructor(
    readonly job: Job,
    readonly leaseMs: number,
    claimStarted: number,
  ) {
    this.dueAt = Math.floor(claimStarted + leaseMs / 2);
  }

  get state(): TrackedState {
    return STATES[this.flags & STATE_BITS]!;
  }
  set state(state: TrackedState) {
    this.flags = (this.flags & ~STATE_BITS) | stateBits(state);
  }

  get leaseLost(): boolean {
    return (this.flags & LEASE_LOST) !== 0;
  }
  set leaseLost(on: boolean) {
    this.flag(LEASE_LOST, on);
  }

  /** Cancelled from some process while it ran: its outcome is recorded already, nothing is written for it. */
  get cancelled(): boolean {
    return (this.flags & CANCELLED) !== 0;
  }
  set cancelled(on: boolean) {
    this.flag(CANCELLED, on);
  }

  /** A heartbeat of its claim is in flight. */
  get renewing(): boolean {
    return (this.flags & RENEWING) !== 0;
  }
  set renewing(on: boolean) {
    this.flag(RENEWING, on);
  }

  /** Half its lease in whole ms (at least 1): the renewal interval. */
  get halfLease(): number {
    return Math.max(1, Math.floor(this.leaseMs / 2));
  }

  private flag(bit: number, on: boolean): void {
    this.flags = on ? this.flags | bit : this.flags & ~bit;
  }
}

/**
 * The records a worker holds: an array and each record's index in it, instead of a Set (whose table
 * costs about 33 bytes an entry). Deleting moves the last record into the freed index, so the order is
 * not the order of adding, and a record must not be deleted while the set is iterated.
 */
export class TrackedSet implements Iterable<Tracked> {
  private readonly items: Tracked[] = [];

  get size(): number {
    return this.items.length;
  }

  add(t: Tracked): void {
    if (t.slot >= 0) return;
    t.slot = this.items.length;
    this.items.push(t);
  }

  /** False when `t` was not in the set. */
  delete(t: Tracked): boolean {
    const i = t.slot;
    if (i < 0 || this.items[i] !== t) return false;
    const last = this.items.pop()!;
    if (last !== t) {
      this.items[i] = last;
      last.slot = i;
    }
    t.slot = -1;
    return true;
  }

  [Symbol.iterator](): Iterator<Tracked> {
    return this.items[Symbol.iterator]();
  }
}

/** The per-job controllers (`jobSignals`, for handlers that can read their signal); most records have none. */
const controllers = new WeakMap<Tracked, AbortController>();

/** `ac` is the controller of the signal the handler call of `items` was given. */
export function giveController(items: readonly Tracked[], ac: AbortController): void {
  for (const t of items) controllers.set(t, ac);
}

/** Aborts the signal of `t`'s handler call with `reason`, if it has one of its own (with `turnSignals`: its turn's). */
export function abortJob(t: Tracked, reason: unknown): void {
  controllers.get(t)?.abort(reason);
}

/**
 * The abort reason of a job whose claim lapsed (a heartbeat or fenced write changed nothing). With
 * `turnSignals` the jobs started in the same turn see it too: their leases are not known to be lost, so a
 * dispatcher gives them back (released, attempt returned) rather than counting it as a failure.
 */
export class LeaseLostAbort extends Error {
  constructor() {
    super('lease lost');
    this.name = 'LeaseLostAbort';
  }
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
