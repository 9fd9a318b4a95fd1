import { InvalidSpec } from './errors.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const EVERY = /^@every ([1-9][0-9]{0,9})([smhd])$/;

/** A parsed `@every` spec. */
export interface EverySpec {
  readonly spec: string;
  readonly intervalMs: number;
}

/**
 * Parses `@every <n><s|m|h|d>` with n > 0 (SPEC §7). Anything else, cron
 * strings included, throws {@link InvalidSpec}.
 */
export function parseEverySpec(spec: unknown): EverySpec {
  if (typeof spec !== 'string') throw new InvalidSpec(spec);
  const m = EVERY.exec(spec);
  if (!m) throw new InvalidSpec(spec);
  const intervalMs = Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
  if (!Number.isSafeInteger(intervalMs)) throw new InvalidSpec(spec);
  return { spec, intervalMs };
}

/** Most boundaries one runner tick enqueues before skipping forward. */
export const SCHEDULE_CATCH_UP_CAP = 64;

/**
 * Pure catch-up arithmetic: given the stored next fire time, the interval and
 * now, returns the boundaries to enqueue (at most 64) and the next fire time.
 * More than 64 elapsed boundaries: enqueue 64 and skip forward past now.
 */
export function dueBoundaries(nextFireAt: number, intervalMs: number, now: number): { fires: number[]; nextFireAt: number } {
  if (nextFireAt > now) return { fires: [], nextFireAt };
  const elapsed = Math.floor((now - nextFireAt) / intervalMs) + 1;
  const count = Math.min(elapsed, SCHEDULE_CATCH_UP_CAP);
  const fires: number[] = [];
  for (let i = 0; i < count; i++) fires.push(nextFireAt + i * intervalMs);
  // Skip forward: the first boundary strictly after now.
  return { fires, nextFireAt: nextFireAt + elapsed * intervalMs };
}
