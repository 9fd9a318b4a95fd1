// Per-key concurrency, per-key rate limits and global concurrency on SQLite (docs/limits.md).
// Every claim runs in the file's single write transaction, so the counts a claim reads are the
// counts every process sees: the limits hold across processes without further locking.
import { DEFAULT_CONCURRENCY_LIMIT, type ResolvedLimits } from '../../contract/limits.js';
import { queueWakeChannel } from '../../contract/names.js';
import { rateAllowance } from '../../contract/queue-settings.js';
import type { ClaimedRow } from '../shared/queue-driver.js';
import type { WriteCtx } from './writer.js';
import { FIRST_SCAN_MIN, firstScan, limitSettings, scanBound } from '../shared/limits.js';
import {
  BUSY_KEYS,
  BUSY_TOTAL,
  CLEAR_KEY_WINDOWS,
  ENSURE_SETTINGS,
  GET_KEY_WINDOW,
  LIMITED_CANDIDATES,
  LIMITED_CANDIDATES_RATE,
  RATE_FULL_KEYS,
  SET_KEY_WINDOW,
  SET_LIMITS,
  SWEEP_ALL_KEY_WINDOWS,
  SWEEP_KEY_WINDOWS,
} from './limits.sql.js';

/** The limit columns of a settings row. */
export interface LimitSettings {
  keyed: number;
  concurrency_limit: number | null;
  global_concurrency: number | null;
  key_rate_max: number | null;
  key_rate_per_ms: number | null;
}

/**
 * Queue names whose last claim in this process read limits. A job of one that ends wakes the
 * queue (a key may have room again). Process-wide by name: a wake is a hint, so a name shared by
 * two stores costs at most a spurious wake (or a missed one, and the idle poll).
 */
const LIMITED = new Set<string>();

/**
 * Queue names, and the candidates per claimed job the last limited claim of the queue in this process
 * walked to fill its batch: the next claim's first read is sized by it (see `claimLimited`). A hint
 * only, process-wide by name as {@link LIMITED}.
 */
const WALKED = new Map<string, number>();

/** How much more than the last full batch walked per job a first read takes (room for a few more skips). */
const WALKED_SLACK = 1.25;

/** Records what a claim read about `queue`'s limits. */
export function noteLimited(queue: string, limited: boolean): void {
  if (limited) LIMITED.add(queue);
  else LIMITED.delete(queue);
}

/** A job of `queue` ended (ack, fail): when the queue has limits, its workers are woken on commit to claim again. */
export function endedInLimited(ctx: WriteCtx, queue: string): void {
  if (LIMITED.has(queue)) ctx.wake(queueWakeChannel(queue));
}

/** Whether a queue's claims must count: a keyed job was ever enqueued, or a global limit is set. */
export function hasLimits(s: LimitSettings): boolean {
  return s.keyed !== 0 || s.global_concurrency !== null;
}

/** A limited claim's candidate row; `lapsed` 1 when it is a processing job whose lease ran out. */
export interface LimitedCandidate {
  id: number;
  attempts: number;
  max_attempts: number;
  ordering_key: string | null;
  concurrency_key: string | null;
  rate_key: string | null;
  lapsed: number;
}

/**
 * Claims up to `max` candidates in claim order, skipping those whose key is at its concurrency
 * limit or out of its rate window, and stopping at the queue's global limit. Processing jobs count
 * while their lease runs (a lapsed lease frees its slot). Exhausted candidates go dead (`bury`); the
 * picks are claimed together by `claimRows`, which returns their rows in claim order.
 * Keys full when the claim starts are left out of the candidate scan itself, so their jobs do not
 * use up its bound.
 */
export function claimLimited(
  ctx: WriteCtx,
  queue: string,
  max: number,
  s: LimitSettings,
  claimRows: (picked: readonly LimitedCandidate[]) => ClaimedRow[],
  bury: (c: LimitedCandidate) => void,
): ClaimedRow[] {
  const now = ctx.now;
  const conn = ctx.conn;
  let room = max;
  if (s.global_concurrency !== null) {
    room = Math.min(room, s.global_concurrency - (conn.stmt(BUSY_TOTAL).get({ queue, now }) as { n: number }).n);
    if (room <= 0) return [];
  }
  const limit = s.concurrency_limit ?? DEFAULT_CONCURRENCY_LIMIT;
  const busy = new Map<string, number>();
  if (s.keyed !== 0)
    for (const r of conn.stmt(BUSY_KEYS).all({ queue, now }) as { k: string; n: number }[]) busy.set(r.k, r.n);
  const full = [...busy].filter(([, n]) => n >= limit).map(([k]) => k);
  const rate =
    s.key_rate_max !== null && s.key_rate_per_ms !== null ? { max: s.key_rate_max, perMs: s.key_rate_per_ms } : null;
  const windows = new Map<string, { window: number; used: number }>();
  const windowOf = (key: string) => {
    let w = windows.get(key);
    if (w === undefined) {
      const st = conn.stmt(GET_KEY_WINDOW).get(queue, key) as
        { window_start: number; window_count: number } | undefined;
      const a = rateAllowance(
        rate!,
        { windowStart: st?.window_start ?? 0, windowCount: st?.window_count ?? 0 },
        now,
        1,
      );
      w = { window: a.window, used: a.used };
      windows.set(key, w);
    }
    return w;
  };
  const used = new Set<string>();
  const rateFull =
    rate === null
      ? []
      : (conn.pluck(RATE_FULL_KEYS).all(queue, Math.floor(now / rate.perMs) * rate.perMs, rate.max) as string[]);
  const read = (limit: number): LimitedCandidate[] => {
    const scan = { queue, now, limit, full: JSON.stringify(full) };
    return (
      rateFull.length === 0
        ? conn.stmt(LIMITED_CANDIDATES).all(scan)
        : conn.stmt(LIMITED_CANDIDATES_RATE).all({ ...scan, rfull: JSON.stringify(rateFull) })
    ) as LimitedCandidate[];
  };
  // The candidates in claim order: a first read of `firstScan` rows, which is the head of what a read
  // of the full bound returns (the same order, nothing written in between: the picks are applied after
  // the walk), so when the walk runs out of it short of the batch, a read of the full bound goes on
  // from where it stopped and the claim takes exactly what one read of the full bound would have.
  // The first read is what the queue's last full batch walked per job, a quarter more, up to
  // `firstScan`: where keys interleave, about the batch itself instead of twice it.
  const walked = WALKED.get(queue);
  const bound = scanBound(room);
  const first =
    walked === undefined
      ? firstScan(room)
      : Math.min(firstScan(room), Math.max(FIRST_SCAN_MIN, Math.ceil(room * walked * WALKED_SLACK)));
  let candidates = read(first);
  let whole = first >= bound || candidates.length < first;
  const picks: { c: LimitedCandidate; claim: boolean }[] = [];
  let taken = 0;
  let i = 0;
  for (; taken < room; i++) {
    if (i === candidates.length) {
      if (whole) break;
      candidates = read(bound);
      whole = true;
      if (i >= candidates.length) break;
    }
    const c = candidates[i]!;
    if (c.attempts >= c.max_attempts) {
      picks.push({ c, claim: false });
      continue;
    }
    if (c.concurrency_key !== null && (busy.get(c.concurrency_key) ?? 0) >= limit) continue;
    if (rate !== null && c.rate_key !== null && windowOf(c.rate_key).used >= rate.max) continue;
    picks.push({ c, claim: true });
    taken++;
    if (c.concurrency_key !== null) busy.set(c.concurrency_key, (busy.get(c.concurrency_key) ?? 0) + 1);
    if (rate !== null && c.rate_key !== null) {
      windowOf(c.rate_key).used++;
      used.add(c.rate_key);
    }
  }
  if (taken === room) WALKED.set(queue, i / taken);
  const picked: LimitedCandidate[] = [];
  for (const p of picks)
    if (p.claim) picked.push(p.c);
    else bury(p.c);
  // One statement for every pick (the rows of buried candidates are not among them).
  const claimed = claimRows(picked);
  for (const k of used) {
    const w = windows.get(k)!;
    conn.stmt(SET_KEY_WINDOW).run(queue, k, w.window, w.used);
  }
  return claimed;
}

/**
 * Deletes the ended per-key rate windows of `queue`, or of every queue when null: the part of
 * `sweepExpired` and of the retention runner's round that keeps the windows table to the keys of
 * running periods. Returns the rows deleted.
 */
export function sweepRateWindows(ctx: WriteCtx, queue: string | null): number {
  const now = ctx.now;
  return queue === null
    ? ctx.conn.stmt(SWEEP_ALL_KEY_WINDOWS).run({ now }).changes
    : ctx.conn.stmt(SWEEP_KEY_WINDOWS).run({ queue, now }).changes;
}

/** Writes the given limits (undefined fields kept); a new key rate limit starts fresh windows. Wakes the queue's workers. */
export function setLimits(ctx: WriteCtx, queue: string, l: ResolvedLimits): void {
  ctx.conn.stmt(ENSURE_SETTINGS).run(queue);
  ctx.conn.stmt(SET_LIMITS).run({
    queue,
    setC: l.concurrencyLimit === undefined ? 0 : 1,
    c: l.concurrencyLimit ?? null,
    setG: l.globalConcurrency === undefined ? 0 : 1,
    g: l.globalConcurrency ?? null,
    setR: l.keyRateLimit === undefined ? 0 : 1,
    rmax: l.keyRateLimit?.max ?? null,
    rper: l.keyRateLimit?.perMs ?? null,
  });
  if (l.keyRateLimit !== undefined) ctx.conn.stmt(CLEAR_KEY_WINDOWS).run(queue);
  ctx.wake(queueWakeChannel(queue));
}

export { limitSettings };
