import { queueWakeChannel } from '../../contract/names.js';
import type { JobWrite } from '../../contract/options.js';
import type { RedriveResult } from '../../contract/types.js';
import { hasLimitKey } from '../../contract/limits.js';
import { rateAllowance } from '../../contract/queue-settings.js';
import { claimLimited, endedInLimited, hasLimits, noteLimited, type LimitSettings } from './limits.js';
import { BUSY_TOTAL, MARK_KEYED } from './limits.sql.js';
import { COUNT_PLAIN_BATCH } from './counts.sql.js';
import * as Q from './queue.sql.js';
import { jobInsertParams, stampRunAt } from './rows.js';
import type { ClaimedRow, ClaimResult, HandedOff } from '../shared/queue-driver.js';
import type { WriteCtx } from './writer.js';

/** Synchronous queue writes, each run inside one write transaction (docs/semantics.md, Queues). */

/**
 * One statement of an {@link insertPlan}, and what the plan gets back: `get` the first row (or
 * undefined), `run` nothing, `insert` (`INSERT_JOB` with these parameters) the new row's id.
 */
export type InsertStep =
  { kind: 'get' | 'run'; sql: string; params: unknown[] } | { kind: 'insert'; params: unknown[] };
/** What an {@link InsertStep} gave back. */
export type StepAnswer = { readonly [column: string]: unknown } | number | undefined;
/** What an insert plan decided: the ids in payload order, and whether the queue's workers need a wake. */
export interface Inserted {
  ids: number[];
  wake: boolean;
}

/**
 * The key rules of an insert, once for both ways SQLite writes (the store's write connection,
 * synchronously, in {@link insertJobs}; a caller's TypeORM query runner, asynchronously, in
 * external-tx.ts): the plan yields each statement and resumes with its answer, so the decisions
 * do not depend on how a statement is run.
 *
 * Jobs go in in order, each seeing the ones before (a keyed batch behaves as enqueues in order). A
 * live job holding the unique key wins: its id is returned, and with `replace` a pending one takes
 * the new payload, headers and run time. A job behind a live job of its ordering key is inserted blocked.
 */
export function* insertPlan(
  queue: string,
  payloadTexts: readonly string[],
  stamp: JobWrite,
  now: number,
): Generator<InsertStep, Inserted, StepAnswer> {
  const ids: number[] = [];
  let wake = false;
  let marked = false;
  for (const text of payloadTexts) {
    if (stamp.uniqueKey !== null) {
      const live = (yield { kind: 'get', sql: Q.LIVE_BY_UNIQUE_KEY, params: [queue, stamp.uniqueKey] }) as
        { id: number | bigint; state: string } | undefined;
      if (live) {
        if (stamp.replace && live.state === 'pending') {
          yield {
            kind: 'run',
            sql: Q.REPLACE_PENDING,
            params: [text, stamp.headersText, stampRunAt(stamp, now), live.id],
          };
          wake = true;
        }
        ids.push(Number(live.id));
        continue;
      }
    }
    const blocked =
      stamp.orderingKey !== null &&
      (yield { kind: 'get', sql: Q.KEY_IS_LIVE, params: [queue, stamp.orderingKey] }) !== undefined;
    ids.push((yield { kind: 'insert', params: jobInsertParams(queue, text, stamp, now, blocked) }) as number);
    if (!blocked) wake = true;
    if (hasLimitKey(stamp) && !marked) {
      yield { kind: 'run', sql: MARK_KEYED, params: [queue] };
      marked = true;
    }
  }
  return { ids, wake };
}

/** Statement sizes of a plain batch, largest first: a batch goes in as few statements as these make up. */
const MULTI_ROW_SIZES = [100, 25, 5, 1] as const;
const MULTI_ROW_SQL = new Map(MULTI_ROW_SIZES.map((n) => [n, Q.insertJobsSql(n)]));

/**
 * {@link insertPlan} on the store's write connection, in the write transaction of `ctx`. A batch of
 * plain jobs (no unique, ordering or limit key: nothing to look up, every row alike but for its
 * payload) goes in as multi-row statements instead, which insert the same rows in the same order.
 */
export function insertJobs(ctx: WriteCtx, queue: string, payloadTexts: readonly string[], stamp: JobWrite): number[] {
  if (isPlainStamp(stamp)) {
    if (payloadTexts.length > 1) return insertPlainJobs(ctx, queue, payloadTexts, stamp);
    if (payloadTexts.length === 1)
      return [insertPlainJob(ctx, queue, queueWakeChannel(queue), payloadTexts[0]!, stamp)];
  }
  const conn = ctx.conn;
  const plan = insertPlan(queue, payloadTexts, stamp, ctx.now);
  let step = plan.next();
  while (!step.done) {
    const s = step.value;
    step = plan.next(
      s.kind === 'insert'
        ? Number(conn.stmt(Q.INSERT_JOB).run(...s.params).lastInsertRowid)
        : s.kind === 'get'
          ? (conn.stmt(s.sql).get(...s.params) as StepAnswer)
          : void conn.stmt(s.sql).run(...s.params),
    );
  }
  if (step.value.wake) ctx.wake(queueWakeChannel(queue));
  return step.value.ids;
}

/** No unique, ordering or limit key: nothing to look up before the insert, and the job is never blocked. */
function isPlainStamp(stamp: JobWrite): boolean {
  return stamp.uniqueKey === null && stamp.orderingKey === null && !hasLimitKey(stamp);
}

/**
 * One job of a plain stamp ({@link isPlainStamp}), as {@link insertPlan} would insert it (its one
 * step, a pending row that wakes the queue) without the plan's generator: a single enqueue's path.
 * `channel` is the queue's wake channel (`queueWakeChannel(queue)`), which the caller keeps.
 */
function insertPlainJob(ctx: WriteCtx, queue: string, channel: string, text: string, stamp: JobWrite): number {
  const id = Number(
    ctx.conn.stmt(Q.INSERT_JOB).run(...jobInsertParams(queue, text, stamp, ctx.now, false)).lastInsertRowid,
  );
  ctx.wake(channel);
  return id;
}

function insertPlainJobs(ctx: WriteCtx, queue: string, payloadTexts: readonly string[], stamp: JobWrite): number[] {
  const values = jobInsertParams(queue, '', stamp, ctx.now, false);
  values.splice(1, 1); // the payload is per row
  const shared: Record<string, unknown> = {};
  Q.MULTI_ROW_SHARED.forEach((name, i) => (shared[name] = values[i]));
  const ids: number[] = [];
  let at = 0;
  for (const size of MULTI_ROW_SIZES) {
    while (payloadTexts.length - at >= size) {
      const params = { ...shared };
      for (let i = 0; i < size; i++) params[`p${i}`] = payloadTexts[at + i];
      const last = Number(ctx.conn.stmt(MULTI_ROW_SQL.get(size)!).run(params).lastInsertRowid);
      for (let id = last - size + 1; id <= last; id++) ids.push(id);
      at += size;
    }
  }
  // The rows went in precounted (the insert trigger skipped them): one counter upsert for all of them.
  ctx.conn.stmt(COUNT_PLAIN_BATCH).run({ queue, runAt: shared.runAt, n: payloadTexts.length });
  ctx.wake(queueWakeChannel(queue));
  return ids;
}

/**
 * Local hand-off: one job without unique or limit keys inserted already claimed by `workerId` when, in
 * this write transaction, the queue is neither paused nor rate-limited, the job is due now, no job a
 * claim would take first is waiting and no job of its ordering key (if it has one) is live; otherwise
 * inserted pending (waking, or blocked behind its key) exactly as {@link insertJobs}. Plain enqueues
 * bring no ordering key (`handoffCandidate`); a workflow run's first pass does (the run's key).
 * `claimed` is null when it went pending.
 */
export function insertJobHandingOff(
  ctx: WriteCtx,
  queue: string,
  payloadText: string,
  stamp: JobWrite,
  workerId: string,
  leaseMs: number | null,
  newToken: () => string,
): HandedOff {
  const now = ctx.now;
  const settings = ctx.conn.stmt(Q.GET_SETTINGS).get(queue) as SettingsRow | undefined;
  const limited =
    settings !== undefined &&
    (settings.paused !== 0 || settings.rate_max !== null || settings.global_concurrency !== null);
  const runAt = stampRunAt(stamp, now);
  // A job a claim would take first is waiting (it fell due by time, sending no wake): never overtake it.
  const waiting = () =>
    (ctx.conn.stmt(Q.CLAIMABLE_WAITING).get({ queue, now, priority: stamp.priority }) as { waiting: number })
      .waiting !== 0;
  const keyLive = () =>
    stamp.orderingKey !== null && ctx.conn.stmt(Q.KEY_IS_LIVE).get(queue, stamp.orderingKey) !== undefined;
  if (limited || stamp.uniqueKey !== null || hasLimitKey(stamp) || runAt > now || keyLive() || waiting()) {
    return { id: insertJobs(ctx, queue, [payloadText], stamp)[0]!, claimed: null };
  }
  const row = ctx.conn.stmt(Q.INSERT_CLAIMED_JOB).get({
    queue,
    payload: payloadText,
    priority: stamp.priority,
    maxAttempts: stamp.maxAttempts,
    visibility: stamp.visibilityTimeoutMs,
    backoff: stamp.backoffBaseMs,
    retention: stamp.deadLetterRetentionMs,
    runAt,
    now,
    expiresAt: stamp.expiresInMs !== null ? now + stamp.expiresInMs : null,
    headers: stamp.headersText,
    token: newToken(),
    lease: leaseMs,
    worker: workerId,
    orderingKey: stamp.orderingKey,
  }) as ClaimedRow;
  return { id: row.id, claimed: row };
}

/** After a job of `key` left the live states: unless a head is still live, the oldest live job becomes the head. */
export function promoteNext(ctx: WriteCtx, queue: string, key: string): void {
  if (ctx.conn.stmt(Q.KEY_HAS_HEAD).get(queue, key) !== undefined) return;
  if (ctx.conn.stmt(Q.PROMOTE_OLDEST).run(queue, key).changes > 0) ctx.wake(queueWakeChannel(queue));
}

/** What a statement ending a job reports (`RETURNING ordering_key, blocked`). */
interface Ended {
  ordering_key: string | null;
  blocked: number;
}

/** {@link promoteNext} for every key of `keys`, the keys after the first in one statement. */
export function promoteKeys(ctx: WriteCtx, queue: string, keys: ReadonlySet<string>): void {
  if (keys.size === 0) return;
  if (keys.size === 1) {
    for (const key of keys) promoteNext(ctx, queue, key);
    return;
  }
  const moved = ctx.conn.stmt(Q.PROMOTE_KEYS).run({ queue, keys: JSON.stringify([...keys]) }).changes;
  if (moved > 0) ctx.wake(queueWakeChannel(queue));
}

function afterEnded(ctx: WriteCtx, queue: string, row: Ended | undefined): void {
  if (row && row.ordering_key !== null && row.blocked === 0) promoteNext(ctx, queue, row.ordering_key);
}

interface Candidate {
  id: number;
  attempts: number;
  max_attempts: number;
  ordering_key: string | null;
  /** 1: a processing job whose lease ran out (its attempt is recorded as the claim takes it). */
  lapsed: number;
}

/** Records the attempt of a lapsed candidate the claim takes over or buries (step 14), in the claim's write. */
function recordLapsed(ctx: WriteCtx, c: { id: number; lapsed: number }, outcome: 'lapsed' | 'dead'): void {
  if (c.lapsed !== 0)
    ctx.conn.stmt(Q.RECORD_LAPSED).run({
      id: c.id,
      outcome: outcome === 'dead' ? 'dead' : 'lapsed',
      error: outcome === 'dead' ? 'max attempts exceeded' : null,
    });
}

interface SettingsRow extends LimitSettings {
  paused: number;
  rate_max: number | null;
  rate_per_ms: number | null;
  window_start: number;
  window_count: number;
}

/**
 * Claims up to `want` candidates in claim order. A candidate whose attempts are
 * exhausted goes dead instead and does not count toward `want`.
 */
export function claimJobs(
  ctx: WriteCtx,
  queue: string,
  want: number,
  leaseMs: number | null,
  workerId: string | null,
  newToken: () => string,
): ClaimResult {
  const rows = claimRows(ctx, queue, want, leaseMs, workerId, newToken);
  if (rows === null) return { rows: [], nextDueInMs: null };
  // A short claim: the worker times its next claim to the next run_at instead of its idle poll.
  const nextDueInMs =
    rows.length < want
      ? ((ctx.conn.stmt(Q.NEXT_DUE_IN).get({ queue, now: ctx.now }) as { due_in: number | null } | undefined)?.due_in ??
        null)
      : null;
  return { rows, nextDueInMs };
}

/** null: the queue is paused (nothing to wait for). */
function claimRows(
  ctx: WriteCtx,
  queue: string,
  want: number,
  leaseMs: number | null,
  workerId: string | null,
  newToken: () => string,
): ClaimedRow[] | null {
  const now = ctx.now;
  // Pause and rate limit: the settings row is read in this write transaction, so every process
  // counts against the same window (writes are serialized on the file's write lock).
  const settings = ctx.conn.stmt(Q.GET_SETTINGS).get(queue) as SettingsRow | undefined;
  let max = want;
  let rate: { window: number; used: number } | null = null;
  if (settings) {
    if (settings.paused !== 0) return null;
    if (settings.rate_max !== null && settings.rate_per_ms !== null) {
      const a = rateAllowance(
        { max: settings.rate_max, perMs: settings.rate_per_ms },
        { windowStart: settings.window_start, windowCount: settings.window_count },
        now,
        want,
      );
      if (a.allowed === 0) return [];
      max = a.allowed;
      rate = a;
    }
  }
  let claimed: ClaimedRow[];
  if (settings && settings.keyed === 0 && settings.global_concurrency !== null) {
    // Only a global limit: with no key to rank by, the limited claim is the plain one of at most
    // what the limit leaves. Ends wake the workers (a slot is free again) only while the limit
    // bound the last claim: below it, a worker short of jobs waits for enqueues, not for slots.
    const busy = (ctx.conn.stmt(BUSY_TOTAL).get({ queue, now }) as { n: number }).n;
    const room = Math.min(max, settings.global_concurrency - busy);
    noteLimited(queue, room < max);
    claimed = room > 0 ? claimUpTo(ctx, queue, room, leaseMs, workerId, newToken) : [];
    if (rate) ctx.conn.stmt(Q.SET_WINDOW).run(rate.window, rate.used + claimed.length, queue);
    return claimed;
  }
  noteLimited(queue, settings !== undefined && hasLimits(settings));
  claimed =
    settings && hasLimits(settings)
      ? claimLimited(
          ctx,
          queue,
          max,
          settings,
          (picked) => {
            for (const c of picked) recordLapsed(ctx, c, 'lapsed');
            const rows: ClaimedRow[] = [];
            claimTaken(ctx, picked, leaseMs, workerId, newToken, rows);
            return rows;
          },
          (c) => {
            recordLapsed(ctx, c, 'dead');
            ctx.conn.stmt(Q.TO_DEAD).run({ error: 'max attempts exceeded', now, id: c.id });
            if (c.ordering_key !== null) promoteNext(ctx, queue, c.ordering_key);
          },
        )
      : claimUpTo(ctx, queue, max, leaseMs, workerId, newToken);
  if (rate) ctx.conn.stmt(Q.SET_WINDOW).run(rate.window, rate.used + claimed.length, queue);
  return claimed;
}

function claimUpTo(
  ctx: WriteCtx,
  queue: string,
  max: number,
  leaseMs: number | null,
  workerId: string | null,
  newToken: () => string,
): ClaimedRow[] {
  const now = ctx.now;
  const select = ctx.conn.stmt(Q.CLAIM_CANDIDATES);
  const claimed: ClaimedRow[] = [];
  for (;;) {
    const need = max - claimed.length;
    const candidates = select.all({ queue, now, limit: need }) as Candidate[];
    const taken: Candidate[] = [];
    let exhausted = 0;
    for (const c of candidates) {
      if (c.attempts >= c.max_attempts) {
        recordLapsed(ctx, c, 'dead');
        ctx.conn.stmt(Q.TO_DEAD).run({ error: 'max attempts exceeded', now, id: c.id });
        if (c.ordering_key !== null) promoteNext(ctx, queue, c.ordering_key);
        exhausted++;
        continue;
      }
      // Read from the row before the claim below writes it.
      recordLapsed(ctx, c, 'lapsed');
      taken.push(c);
    }
    claimTaken(ctx, taken, leaseMs, workerId, newToken, claimed);
    // Only dead-lettered candidates can leave room for more; otherwise we are done.
    if (exhausted === 0 || candidates.length < need || claimed.length >= max) return claimed;
  }
}

/**
 * Claims the candidates `taken` (in claim order), each with a token of its own, and appends their
 * claimed rows to `out` in that order: one statement for all of them (CLAIM_ROWS), or CLAIM_ROW for one.
 */
function claimTaken(
  ctx: WriteCtx,
  taken: readonly Candidate[],
  leaseMs: number | null,
  workerId: string | null,
  newToken: () => string,
  out: ClaimedRow[],
): void {
  const now = ctx.now;
  if (taken.length === 0) return;
  if (taken.length === 1) {
    out.push(
      ctx.conn
        .stmt(Q.CLAIM_ROW)
        .get({ token: newToken(), now, lease: leaseMs, worker: workerId, id: taken[0]!.id }) as ClaimedRow,
    );
    return;
  }
  const items = taken.map((c) => [c.id, newToken()]);
  const rows = ctx.conn
    .stmt(Q.CLAIM_ROWS)
    .all({ items: JSON.stringify(items), now, lease: leaseMs, worker: workerId }) as ClaimedRow[];
  // RETURNING's order is the update's, not the candidates': put them back in claim order.
  const byId = new Map<number, ClaimedRow>();
  for (const r of rows) byId.set(r.id, r);
  for (const c of taken) out.push(byId.get(c.id)!);
}

/** `plain`: the caller's own claimed handle says the job has no ordering key, so nothing can need promoting. */
export function ackJob(ctx: WriteCtx, queue: string, id: number, token: string, plain = false): boolean {
  const ok = plain
    ? ctx.conn.stmt(Q.ACK_PLAIN).run({ id, token, now: ctx.now }).changes > 0
    : ackChecking(ctx, queue, id, token);
  if (ok) endedInLimited(ctx, queue);
  return ok;
}

function ackChecking(ctx: WriteCtx, queue: string, id: number, token: string): boolean {
  const row = ctx.conn.stmt(Q.ACK).get({ id, token, now: ctx.now }) as Ended | undefined;
  afterEnded(ctx, queue, row);
  return row !== undefined;
}

export function ackJobs(
  ctx: WriteCtx,
  queue: string,
  jobs: readonly { id: number; claimToken: string; plain?: boolean }[],
): number {
  if (jobs.length > 1)
    return jobs.every((j) => j.plain) ? ackPlainJobs(ctx, queue, jobs) : ackKeyedJobs(ctx, queue, jobs);
  let n = 0;
  for (const j of jobs) if (ackJob(ctx, queue, j.id, j.claimToken, j.plain)) n++;
  return n;
}

/**
 * Acks jobs that may have ordering keys in one statement, each fenced as {@link ackJob} fences it, then
 * gives each key that lost its head its next job (a key has at most one claimed job, so every job is
 * gone before any key is looked at, as one ack after another would leave them). Returns how many it acked.
 */
function ackKeyedJobs(ctx: WriteCtx, queue: string, jobs: readonly { id: number; claimToken: string }[]): number {
  const ended = ctx.conn
    .stmt(Q.ACK_ROWS)
    .all({ items: JSON.stringify(jobs.map((j) => [j.id, j.claimToken])), now: ctx.now }) as Ended[];
  const heads = new Set<string>();
  for (const r of ended) if (r.ordering_key !== null && r.blocked === 0) heads.add(r.ordering_key);
  promoteKeys(ctx, queue, heads);
  if (ended.length > 0) endedInLimited(ctx, queue);
  return ended.length;
}

/**
 * Acks jobs none of which has an ordering key (their claimed handles say so: nothing to promote) in
 * one statement, each fenced as {@link ackJob} fences it. Returns how many it acked.
 */
export function ackPlainJobs(
  ctx: WriteCtx,
  queue: string,
  jobs: readonly { id: number; claimToken: string }[],
): number {
  const n = ctx.conn
    .stmt(Q.ACK_PLAIN_ROWS)
    .run({ items: JSON.stringify(jobs.map((j) => [j.id, j.claimToken])), now: ctx.now }).changes;
  if (n > 0) endedInLimited(ctx, queue);
  return n;
}

/** `delayMs` already resolved (the job computes the backoff); dead instead when this claim was the last attempt. */
export function retryJob(
  ctx: WriteCtx,
  queue: string,
  id: number,
  token: string,
  lastError: string,
  delayMs: number,
  detail: string = lastError,
): 'retried' | 'dead' | null {
  const now = ctx.now;
  const row = ctx.conn.stmt(Q.VALID_FOR_RETRY).get({ id, token, now }) as EndingAttempt | undefined;
  if (!row) return null;
  if (row.attempts >= row.max_attempts) {
    ctx.conn.stmt(Q.TO_DEAD).run({ error: lastError, now, id });
    recordAttempt(ctx, queue, id, row, 'dead', detail);
    if (row.ordering_key !== null) promoteNext(ctx, queue, row.ordering_key);
    endedInLimited(ctx, queue);
    return 'dead';
  }
  ctx.conn.stmt(Q.TO_PENDING).run({ id, runAt: now + delayMs, error: lastError });
  recordAttempt(ctx, queue, id, row, 'retried', detail);
  ctx.wake(queueWakeChannel(queue));
  return 'retried';
}

/** The claim a retry / fail ends, as VALID_FOR_RETRY reads it before the write clears it. */
interface EndingAttempt {
  attempts: number;
  max_attempts: number;
  ordering_key: string | null;
  worker_id: string | null;
  claimed_at: number | null;
}

/** Writes the failed attempt's row (step 14) inside the retry / fail write. */
function recordAttempt(
  ctx: WriteCtx,
  queue: string,
  id: number,
  row: EndingAttempt,
  outcome: 'retried' | 'dead',
  error: string,
): void {
  ctx.conn.stmt(Q.RECORD_ATTEMPT).run({
    id,
    queue,
    attempt: row.attempts,
    worker: row.worker_id,
    claimedAt: row.claimed_at,
    now: ctx.now,
    outcome,
    error,
  });
}

export function failJob(
  ctx: WriteCtx,
  queue: string,
  id: number,
  token: string,
  lastError: string,
  detail: string = lastError,
): boolean {
  const now = ctx.now;
  const row = ctx.conn.stmt(Q.VALID_FOR_RETRY).get({ id, token, now }) as EndingAttempt | undefined;
  if (!row) return false;
  ctx.conn.stmt(Q.TO_DEAD).run({ error: lastError, now, id });
  recordAttempt(ctx, queue, id, row, 'dead', detail);
  if (row.ordering_key !== null) promoteNext(ctx, queue, row.ordering_key);
  endedInLimited(ctx, queue);
  return true;
}

/** Resolves the new deadline, or null when the handle is no longer valid. */
export function heartbeatJob(ctx: WriteCtx, id: number, token: string, extendMs: number): number | null {
  const row = ctx.conn.stmt(Q.HEARTBEAT).get({ id, token, now: ctx.now, extend: extendMs }) as
    { claimed_until: number } | undefined;
  return row ? row.claimed_until : null;
}

export function releaseJob(ctx: WriteCtx, queue: string, id: number, token: string): boolean {
  if (ctx.conn.stmt(Q.RELEASE).run({ id, token, now: ctx.now }).changes === 0) return false;
  ctx.wake(queueWakeChannel(queue));
  return true;
}

export function cancelJob(ctx: WriteCtx, queue: string, id: number): boolean {
  const row = ctx.conn.stmt(Q.CANCEL).get(id, queue) as Ended | undefined;
  afterEnded(ctx, queue, row);
  return row !== undefined;
}

export function sweepQueue(ctx: WriteCtx, queue: string): { expired: number; purged: number } {
  const now = ctx.now;
  const ended = ctx.conn.stmt(Q.EXPIRE).all({ queue, now }) as Ended[];
  // Every expired row is dead before any key's next head is chosen.
  const heads = new Set<string>();
  for (const r of ended) if (r.ordering_key !== null && r.blocked === 0) heads.add(r.ordering_key);
  promoteKeys(ctx, queue, heads);
  const purged = ctx.conn.stmt(Q.PURGE_RETAINED).run({ queue, now }).changes;
  ctx.conn.stmt(Q.PRUNE_ATTEMPTS).run({ queue });
  return { expired: ended.length, purged };
}

/**
 * Redrive in id order: a dead job whose unique key a live job holds (or an earlier job of this
 * redrive just took back) stays dead and is reported, as on PostgreSQL (`redrive_dead`).
 */
export function retryDeadJobs(ctx: WriteCtx, queue: string, ids: readonly number[]): RedriveResult {
  const stmt = ctx.conn.stmt(Q.RETRY_DEAD);
  const held = ctx.conn.stmt(Q.DEAD_KEY_HELD);
  const now = ctx.now;
  let n = 0;
  const conflictIds: number[] = [];
  const keys = new Set<string>();
  for (const id of [...new Set(ids)].sort((a, b) => a - b)) {
    const row = stmt.get({ id, queue, now }) as { ordering_key: string | null } | undefined;
    if (row === undefined) {
      if (held.get({ id, queue }) !== undefined) conflictIds.push(id);
      continue;
    }
    n++;
    if (row.ordering_key !== null) keys.add(row.ordering_key);
  }
  promoteKeys(ctx, queue, keys);
  if (n > 0) ctx.wake(queueWakeChannel(queue));
  return { moved: n, conflicts: conflictIds.length, conflictIds };
}

export function setPaused(ctx: WriteCtx, queue: string, paused: boolean): void {
  ctx.conn.stmt(Q.SET_PAUSED).run(queue, paused ? 1 : 0);
  if (!paused) ctx.wake(queueWakeChannel(queue));
}

export function setRateLimit(ctx: WriteCtx, queue: string, max: number | null, perMs: number | null): void {
  ctx.conn.stmt(Q.SET_RATE_LIMIT).run(queue, max, perMs);
  ctx.wake(queueWakeChannel(queue));
}

export function purgeDeadJobs(ctx: WriteCtx, queue: string, ids: readonly number[]): number {
  const stmt = ctx.conn.stmt(Q.PURGE_DEAD);
  let n = 0;
  for (const id of ids) n += stmt.run(id, queue).changes;
  return n;
}
