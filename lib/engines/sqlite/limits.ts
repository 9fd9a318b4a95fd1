// Per-key concurrency, per-key rate limits and global concurrency on SQLite (issue #27 item 5; docs/limits.md).
// Every claim runs in the file's single write transaction, so the counts a claim reads are the
// counts every process sees: the limits hold across processes without further locking.
import { DEFAULT_CONCURRENCY_LIMIT, type ResolvedLimits } from '../../contract/limits.js';
import { queueWakeChannel } from '../../contract/names.js';
import { rateAllowance } from '../../contract/queue-settings.js';
import type { ClaimedRow } from '../shared/queue-driver.js';
import type { WriteCtx } from './writer.js';

/** Migration 12's new tables (fresh files and upgrades; idempotent). Columns are added by the step's `addColumns`. */
export const LIMITS_DDL = `
CREATE TABLE IF NOT EXISTS __alkstore_key_rate_windows (
  queue TEXT NOT NULL,
  key TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  window_count INTEGER NOT NULL,
  PRIMARY KEY (queue, key)
) WITHOUT ROWID;
`;

/** Migration 12's columns. */
export const LIMITS_COLUMNS: readonly { table: string; column: string; type: string }[] = [
  { table: '__alkstore_jobs', column: 'concurrency_key', type: 'TEXT' },
  { table: '__alkstore_jobs', column: 'rate_key', type: 'TEXT' },
  { table: '__alkstore_queue_settings', column: 'keyed', type: 'INTEGER NOT NULL DEFAULT 0' },
  { table: '__alkstore_queue_settings', column: 'concurrency_limit', type: 'INTEGER' },
  { table: '__alkstore_queue_settings', column: 'global_concurrency', type: 'INTEGER' },
  { table: '__alkstore_queue_settings', column: 'key_rate_max', type: 'INTEGER' },
  { table: '__alkstore_queue_settings', column: 'key_rate_per_ms', type: 'INTEGER' },
];

/**
 * Step 23: the windows of a queue's running period that are full are one range of this index
 * (`window_start` equal, `window_count` at least the max), so the claim's scan can leave their keys
 * out without reading a row per key used in the period.
 */
export const RATE_WINDOWS_INDEX_DDL = `
CREATE INDEX IF NOT EXISTS __alkstore_key_rate_windows_window
  ON __alkstore_key_rate_windows (queue, window_start, window_count);
`;

/** Created after the steps ran (the columns may be new). */
export const LIMITS_INDEX_DDL = `
CREATE INDEX IF NOT EXISTS __alkstore_jobs_concurrency
  ON __alkstore_jobs (queue, concurrency_key) WHERE concurrency_key IS NOT NULL AND state = 'processing';
`;

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

/** The first keyed enqueue of a queue marks it (the claim then counts keys): queue. */
export const MARK_KEYED = `INSERT INTO __alkstore_queue_settings (queue, keyed) VALUES (?, 1)
  ON CONFLICT (queue) DO UPDATE SET keyed = 1 WHERE keyed = 0`;

const LIVE_PROCESSING = `queue = @queue AND state = 'processing' AND claimed_until > @now`;
const BUSY_TOTAL = `SELECT count(*) AS n FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing WHERE ${LIVE_PROCESSING}`;
const BUSY_KEYS = `SELECT concurrency_key AS k, count(*) AS n FROM __alkstore_jobs INDEXED BY __alkstore_jobs_concurrency
  WHERE concurrency_key IS NOT NULL AND ${LIVE_PROCESSING} GROUP BY concurrency_key`;
const GET_KEY_WINDOW = `SELECT window_start, window_count FROM __alkstore_key_rate_windows WHERE queue = ? AND key = ?`;
const SET_KEY_WINDOW = `INSERT INTO __alkstore_key_rate_windows (queue, key, window_start, window_count) VALUES (?, ?, ?, ?)
  ON CONFLICT (queue, key) DO UPDATE SET window_start = excluded.window_start, window_count = excluded.window_count`;
const CLEAR_KEY_WINDOWS = `DELETE FROM __alkstore_key_rate_windows WHERE queue = ?`;
/**
 * The per-key rate windows no claim can read again (of the queues `where` selects): their period
 * ended, or their queue has no key rate limit any more. A deleted window reads as an empty one,
 * which is what an ended window counts for (`rateAllowance`).
 */
const endedWindows = (
  where: string,
): string => `DELETE FROM __alkstore_key_rate_windows AS w WHERE ${where} AND NOT EXISTS (
  SELECT 1 FROM __alkstore_queue_settings s
  WHERE s.queue = w.queue AND s.key_rate_max IS NOT NULL AND s.key_rate_per_ms IS NOT NULL
    AND w.window_start + s.key_rate_per_ms > @now)`;
const SWEEP_KEY_WINDOWS = endedWindows('w.queue = @queue');
const SWEEP_ALL_KEY_WINDOWS = endedWindows('1');
const ENSURE_SETTINGS = `INSERT INTO __alkstore_queue_settings (queue) VALUES (?) ON CONFLICT (queue) DO NOTHING`;
const SET_LIMITS = `UPDATE __alkstore_queue_settings SET
  concurrency_limit = CASE WHEN @setC THEN @c ELSE concurrency_limit END,
  global_concurrency = CASE WHEN @setG THEN @g ELSE global_concurrency END,
  key_rate_max = CASE WHEN @setR THEN @rmax ELSE key_rate_max END,
  key_rate_per_ms = CASE WHEN @setR THEN @rper ELSE key_rate_per_ms END
  WHERE queue = @queue`;

/**
 * The rate keys of a queue whose window of the running period is full (queue, window start, max):
 * one range of step 23's index, so its cost follows the full keys, not the keys used in the period.
 */
const RATE_FULL_KEYS = `SELECT key FROM __alkstore_key_rate_windows INDEXED BY __alkstore_key_rate_windows_window
  WHERE queue = ? AND window_start = ? AND window_count >= ?`;

// Claim candidates of keys not yet at their limit, pending and lapsed, in claim order. @full: a JSON
// array of the concurrency keys at their limit; @rfull: a JSON array of the rate keys whose window is full.
const COLS = 'id, priority, run_at, attempts, max_attempts, ordering_key, concurrency_key, rate_key';
const CONCURRENCY_NOT_FULL = `(concurrency_key IS NULL OR concurrency_key NOT IN (SELECT value FROM json_each(@full)))`;
const RATE_NOT_FULL = `(rate_key IS NULL OR rate_key NOT IN (SELECT value FROM json_each(@rfull)))`;
const candidatesSql = (notFull: string): string => `
SELECT ${COLS}, 0 AS lapsed FROM (
  SELECT ${COLS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_pending
  WHERE queue = @queue AND state = 'pending' AND blocked = 0 AND +run_at <= @now AND (expires_at IS NULL OR expires_at > @now) AND ${notFull}
  ORDER BY priority DESC, run_at, id LIMIT @limit)
UNION ALL
SELECT ${COLS}, 1 AS lapsed FROM (
  SELECT ${COLS} FROM __alkstore_jobs INDEXED BY __alkstore_jobs_processing
  WHERE queue = @queue AND state = 'processing' AND claimed_until <= @now AND (expires_at IS NULL OR expires_at > @now) AND ${notFull}
  ORDER BY priority DESC, run_at, id LIMIT @limit)
ORDER BY priority DESC, run_at, id LIMIT @limit`;
/** The limited claim's candidates when no rate key is full: @queue, @now, @limit, @full. */
export const LIMITED_CANDIDATES = candidatesSql(CONCURRENCY_NOT_FULL);
/**
 * {@link LIMITED_CANDIDATES} that also leaves out the rate keys of @rfull. Taken only when some key's
 * window is full, so the claims of a queue with none pay no filter per row read.
 */
export const LIMITED_CANDIDATES_RATE = candidatesSql(`${CONCURRENCY_NOT_FULL} AND ${RATE_NOT_FULL}`);

/** Candidates one limited claim reads at most: past them, jobs of free keys wait for the next claim. */
export function scanBound(room: number): number {
  return Math.min(10_000, Math.max(256, room * 16));
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
 * while their lease runs (a lapsed lease frees its slot). Exhausted candidates go dead (`bury`).
 * Keys full when the claim starts are left out of the candidate scan itself, so their jobs do not
 * use up its bound.
 */
export function claimLimited(
  ctx: WriteCtx,
  queue: string,
  max: number,
  s: LimitSettings,
  claimRow: (c: LimitedCandidate) => ClaimedRow,
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
  const claimed: ClaimedRow[] = [];
  const used = new Set<string>();
  const rateFull =
    rate === null
      ? []
      : (conn.pluck(RATE_FULL_KEYS).all(queue, Math.floor(now / rate.perMs) * rate.perMs, rate.max) as string[]);
  const scan = { queue, now, limit: scanBound(room), full: JSON.stringify(full) };
  const candidates = (
    rateFull.length === 0
      ? conn.stmt(LIMITED_CANDIDATES).all(scan)
      : conn.stmt(LIMITED_CANDIDATES_RATE).all({ ...scan, rfull: JSON.stringify(rateFull) })
  ) as LimitedCandidate[];
  for (const c of candidates) {
    if (claimed.length >= room) break;
    if (c.attempts >= c.max_attempts) {
      bury(c);
      continue;
    }
    if (c.concurrency_key !== null && (busy.get(c.concurrency_key) ?? 0) >= limit) continue;
    if (rate !== null && c.rate_key !== null && windowOf(c.rate_key).used >= rate.max) continue;
    claimed.push(claimRow(c));
    if (c.concurrency_key !== null) busy.set(c.concurrency_key, (busy.get(c.concurrency_key) ?? 0) + 1);
    if (rate !== null && c.rate_key !== null) {
      windowOf(c.rate_key).used++;
      used.add(c.rate_key);
    }
  }
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

/** The limit fields of `QueueSettings` from a settings row (or none). */
export function limitSettings(s: LimitSettings | undefined): {
  concurrencyLimit: number;
  globalConcurrency: number | null;
  keyRateLimit: { max: number; perMs: number } | null;
} {
  return {
    concurrencyLimit: s?.concurrency_limit ?? DEFAULT_CONCURRENCY_LIMIT,
    globalConcurrency: s?.global_concurrency ?? null,
    keyRateLimit:
      s && s.key_rate_max !== null && s.key_rate_per_ms !== null
        ? { max: s.key_rate_max, perMs: s.key_rate_per_ms }
        : null,
  };
}
