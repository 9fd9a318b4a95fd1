import { backoffDelayMs } from '../../contract/backoff.js';
import { queueWakeChannel } from '../../contract/names.js';
import type { JobStamp } from '../../contract/options.js';
import * as Q from './queue.sql.js';
import { jobInsertParams } from './rows.js';
import type { WriteCtx } from './writer.js';

/** Synchronous queue writes, each run inside one write transaction (docs/semantics.md, Queues). */

export function insertJobs(ctx: WriteCtx, queue: string, payloadTexts: readonly string[], stamp: JobStamp): number[] {
  const insert = ctx.conn.stmt(Q.INSERT_JOB);
  const now = ctx.now;
  const ids: number[] = [];
  for (const text of payloadTexts) ids.push(Number(insert.run(...jobInsertParams(queue, text, stamp, now)).lastInsertRowid));
  if (ids.length > 0) ctx.wake(queueWakeChannel(queue));
  return ids;
}

/** A row just claimed. */
export interface ClaimedRow {
  id: number;
  payload: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  claimed_until: number;
  enqueued_at: number;
  token: string;
}

interface Candidate {
  id: number;
  attempts: number;
  max_attempts: number;
}

/**
 * Claims up to `max` candidates in claim order. A candidate whose attempts are
 * exhausted goes dead instead and does not count toward `max`.
 */
export function claimJobs(ctx: WriteCtx, queue: string, max: number, leaseMs: number | null, workerId: string | null, newToken: () => string): ClaimedRow[] {
  const now = ctx.now;
  const select = ctx.conn.stmt(Q.CLAIM_CANDIDATES);
  const claim = ctx.conn.stmt(Q.CLAIM_ROW);
  const claimed: ClaimedRow[] = [];
  for (;;) {
    const need = max - claimed.length;
    const candidates = select.all({ queue, now, limit: need }) as Candidate[];
    let exhausted = 0;
    for (const c of candidates) {
      if (c.attempts >= c.max_attempts) {
        ctx.conn.stmt(Q.TO_DEAD).run({ error: 'max attempts exceeded', now, id: c.id });
        exhausted++;
        continue;
      }
      const token = newToken();
      const row = claim.get({ token, now, lease: leaseMs, worker: workerId, id: c.id }) as Omit<ClaimedRow, 'token'>;
      claimed.push({ ...row, token });
    }
    // Only dead-lettered candidates can leave room for more; otherwise we are done.
    if (exhausted === 0 || candidates.length < need || claimed.length >= max) return claimed;
  }
}

export function ackJob(ctx: WriteCtx, id: number, token: string): boolean {
  return ctx.conn.stmt(Q.ACK).run({ id, token, now: ctx.now }).changes > 0;
}

export function ackJobs(ctx: WriteCtx, jobs: readonly { id: number; claimToken: string }[]): number {
  const ack = ctx.conn.stmt(Q.ACK);
  const now = ctx.now;
  let n = 0;
  for (const j of jobs) n += ack.run({ id: j.id, token: j.claimToken, now }).changes;
  return n;
}

export function retryJob(ctx: WriteCtx, queue: string, id: number, token: string, lastError: string, delayMs: number | undefined, random: () => number): boolean {
  const now = ctx.now;
  const row = ctx.conn.stmt(Q.VALID_FOR_RETRY).get({ id, token, now }) as { attempts: number; max_attempts: number; backoff_base_ms: number } | undefined;
  if (!row) return false;
  if (row.attempts >= row.max_attempts) {
    ctx.conn.stmt(Q.TO_DEAD).run({ error: lastError, now, id });
    return true;
  }
  const delay = delayMs ?? backoffDelayMs(Math.max(1, row.attempts), row.backoff_base_ms, random);
  ctx.conn.stmt(Q.TO_PENDING).run({ id, runAt: now + delay, error: lastError });
  ctx.wake(queueWakeChannel(queue));
  return true;
}

export function failJob(ctx: WriteCtx, id: number, token: string, lastError: string): boolean {
  const now = ctx.now;
  if (!ctx.conn.stmt(Q.VALID_FOR_RETRY).get({ id, token, now })) return false;
  ctx.conn.stmt(Q.TO_DEAD).run({ error: lastError, now, id });
  return true;
}

/** Resolves the new deadline, or null when the handle is no longer valid. */
export function heartbeatJob(ctx: WriteCtx, id: number, token: string, extendMs: number): number | null {
  const row = ctx.conn.stmt(Q.HEARTBEAT).get({ id, token, now: ctx.now, extend: extendMs }) as { claimed_until: number } | undefined;
  return row ? row.claimed_until : null;
}

export function releaseJob(ctx: WriteCtx, queue: string, id: number, token: string): boolean {
  if (ctx.conn.stmt(Q.RELEASE).run({ id, token, now: ctx.now }).changes === 0) return false;
  ctx.wake(queueWakeChannel(queue));
  return true;
}

export function cancelJob(ctx: WriteCtx, queue: string, id: number): boolean {
  return ctx.conn.stmt(Q.CANCEL).run(id, queue).changes > 0;
}

export function sweepQueue(ctx: WriteCtx, queue: string): { expired: number; purged: number } {
  const now = ctx.now;
  const expired = ctx.conn.stmt(Q.EXPIRE).run({ queue, now }).changes;
  const purged = ctx.conn.stmt(Q.PURGE_RETAINED).run({ queue, now }).changes;
  return { expired, purged };
}

export function retryDeadJobs(ctx: WriteCtx, queue: string, ids: readonly number[]): number {
  const stmt = ctx.conn.stmt(Q.RETRY_DEAD);
  const now = ctx.now;
  let n = 0;
  for (const id of ids) n += stmt.run({ id, queue, now }).changes;
  if (n > 0) ctx.wake(queueWakeChannel(queue));
  return n;
}

export function purgeDeadJobs(ctx: WriteCtx, queue: string, ids: readonly number[]): number {
  const stmt = ctx.conn.stmt(Q.PURGE_DEAD);
  let n = 0;
  for (const id of ids) n += stmt.run(id, queue).changes;
  return n;
}
