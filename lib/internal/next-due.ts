import type { Job } from '../contract/types.js';

/**
 * "When is the next job due?", internal to the package: a claim that comes back with fewer jobs than
 * asked carries, under this symbol on its result array (not enumerable), how long after the claim's
 * database instant the queue's next pending job falls due (its `run_at`), or null when no pending job
 * is waiting for its time. Both clocks of the difference are the database's, so it is a duration a
 * worker can time on its own clock: the worker sets a timer to it instead of waiting for its idle
 * poll (River's JobScheduler idea), so a delayed job or a retry after backoff is claimed within a
 * few ms of its `run_at` without a wake. Absent on other implementations and on full claims.
 */
export const NEXT_DUE: unique symbol = Symbol('alkstore.nextDue');

/** Marks `jobs` (a short claim's result) with the time to the queue's next `run_at`. */
export function withNextDue(jobs: Job[], nextDueInMs: number | null): Job[] {
  Object.defineProperty(jobs, NEXT_DUE, { value: nextDueInMs, enumerable: false });
  return jobs;
}

/** The mark of {@link withNextDue}: ms to the next `run_at`, null for none, undefined when the claim did not say. */
export function nextDueOf(jobs: readonly Job[]): number | null | undefined {
  const v = (jobs as { [NEXT_DUE]?: unknown })[NEXT_DUE];
  return v === null ? null : typeof v === 'number' && Number.isFinite(v) ? Math.max(0, v) : undefined;
}

/**
 * Internal to the package, on the claim options of a worker's claims: the caller claims again on its
 * own schedule (it times the next claim from {@link nextDueOf}). Such a claim may read from where the
 * store's last claim of the queue stopped (PostgreSQL's claim watermark, `ClaimGate`) and leave what
 * only a claim from the head finds (lapsed leases; a job made ready with an older `run_at`) to the
 * full claim that follows within a second; a caller's own `claimBatch` always claims from the head.
 */
export const FOLLOWING_CLAIM: unique symbol = Symbol('alkstore.followingClaim');

/** Whether claim options carry {@link FOLLOWING_CLAIM}. */
export function isFollowingClaim(opts: unknown): boolean {
  return (
    typeof opts === 'object' && opts !== null && (opts as { [FOLLOWING_CLAIM]?: unknown })[FOLLOWING_CLAIM] === true
  );
}
