// Limits, the part both engines share (docs/limits.md); each engine's limits.sql.ts holds its statements.

/** Candidates one limited claim reads at most (per branch on PostgreSQL): past them, jobs of free keys wait for the next claim. */
export function scanBound(room: number): number {
  return Math.min(10_000, Math.max(256, room * 16));
}

/**
 * Candidates a limited claim reads first (at most {@link scanBound}): enough for a batch of `room`
 * when the head's keys have room, as they do when keys interleave or the queue has none. The claim
 * reads on to the full bound only when these run out before the batch is full, and claims exactly
 * what a read of the full bound would have.
 */
export function firstScan(room: number): number {
  return Math.min(scanBound(room), Math.max(FIRST_SCAN_MIN, room * FIRST_SCAN_PER_ROOM));
}

/** {@link firstScan}'s floor and its candidates per job of the batch (PostgreSQL's claim computes it in SQL). */
export const FIRST_SCAN_MIN = 32;
export const FIRST_SCAN_PER_ROOM = 2;
