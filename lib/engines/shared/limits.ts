import { DEFAULT_CONCURRENCY_LIMIT } from '../../contract/limits.js';
import type { RateLimit } from '../../contract/types.js';
import { num } from './rows.js';

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

/** A queue's limit columns as either engine reads them (the rate period int8: text on PostgreSQL). */
export interface LimitColumns {
  concurrency_limit: number | null;
  global_concurrency: number | null;
  key_rate_max: number | null;
  key_rate_per_ms: number | string | null;
}

/** The limit fields of `QueueSettings` from a settings row (or none: the defaults). */
export function limitSettings(s: LimitColumns | undefined): {
  concurrencyLimit: number;
  globalConcurrency: number | null;
  keyRateLimit: RateLimit | null;
} {
  return {
    concurrencyLimit: s?.concurrency_limit ?? DEFAULT_CONCURRENCY_LIMIT,
    globalConcurrency: s?.global_concurrency ?? null,
    keyRateLimit:
      s && s.key_rate_max !== null && s.key_rate_per_ms !== null
        ? { max: s.key_rate_max, perMs: num(s.key_rate_per_ms) }
        : null,
  };
}
