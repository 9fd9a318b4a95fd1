// Limits, the part both engines share (docs/limits.md); each engine's limits.sql.ts holds its statements.

/** Candidates one limited claim reads at most (per branch on PostgreSQL): past them, jobs of free keys wait for the next claim. */
export function scanBound(room: number): number {
  return Math.min(10_000, Math.max(256, room * 16));
}
