import { Codec, PayloadTooLarge } from '../../contract/errors.js';
import { requireOffset, validateKey, validateName, validateStoredName } from '../../contract/validate.js';
import { encodePayload, utf8Length } from '../../contract/codec.js';
import { hasLimitKey } from '../../contract/limits.js';
import { queueWakeChannel, streamWakeChannel } from '../../contract/names.js';
import { resolveJobStamp, type JobOpts, type JobWrite, type QueueOpts } from '../../contract/options.js';
import type { EnqueueHeadersHook } from '../../contract/job-extras.js';
import type { ProgressWrites } from '../../contract/results.js';
import type { RedriveResult } from '../../contract/types.js';
import type { HandoffRegistry } from '../../internal/handoff.js';
import type { RemoteTakers } from './remote-handoff.js';
import type { OutcomeCounter } from '../../internal/outcome-counter.js';
import type { WakeHub } from '../../internal/wake-hub.js';
import type { PostgresLiveness } from './liveness.js';
import { num, type Executor, type Rows } from './connection.js';
import { adminSql } from './admin.sql.js';
import { searchSql } from './search.sql.js';
import type { ClaimGate } from './claim-gate.js';
import { flowsSql } from './flows.sql.js';
import { inboxSql } from './inbox.sql.js';
import { lockSql } from './lock.sql.js';
import { notifySql } from './notify/notify.sql.js';
import { limitKeyParams } from './limits.js';
import { limitsSql } from './limits.sql.js';
import { retentionSql } from './retention.sql.js';
import { queueSql } from './queue.sql.js';
import { scheduleSql } from './schedule.sql.js';
import { PG_NOTIFY_LIMIT, SchemaSql, wakePayload, type Sql } from './schema-sql.js';
import { streamSql } from './stream.sql.js';

/** Every statement of the engine for one schema. */
export function engineSql(schema: string) {
  const s = new SchemaSql(schema);
  return {
    queue: queueSql(s),
    stream: streamSql(s),
    lock: lockSql(s),
    schedule: scheduleSql(s),
    notify: notifySql(s),
    admin: adminSql(s),
    inbox: inboxSql(s),
    search: searchSql(s),
    flows: flowsSql(s),
    limits: limitsSql(s),
    retention: retentionSql(s),
    /** The schema's naming (workflow-sql.ts builds the workflows' statements with it). */
    schema: s,
  };
}

export type EngineSql = ReturnType<typeof engineSql>;

/** What mechanism handles share with their store. */
export interface PgContext {
  readonly sql: EngineSql;
  /** The store's pool. */
  readonly exec: Executor;
  readonly hub: WakeHub;
  /** Rejects with `Closed` once the store is closed. */
  guard(): void;
  /** Registered queue options of `queue` (or `defaults`). */
  queueOpts(queue: string, defaults?: Readonly<Required<QueueOpts>>): Required<QueueOpts>;
  /** Random source in [0, 1) of the retry backoff jitter (the `random` store option). */
  readonly random: () => number;
  /** Claims commit with `synchronous_commit = off` for their own transaction (`claimDurability: 'deferred'`). */
  readonly claimDeferred: boolean;
  /** Runs `fn` in a transaction on one pooled client (commit on return, rollback on throw). */
  inTransaction<T>(fn: (exec: Executor) => Promise<T>): Promise<T>;
  /** Buffered throughput counts (dashboard), written every few seconds. */
  readonly outcomes: OutcomeCounter;
  /** Progress writes not landed yet (written at close). */
  readonly progressWrites: ProgressWrites;
  /** Which claim statement each queue's next claim may use (settings cache of this store). */
  readonly claims: ClaimGate;
  /** Poll interval while LISTEN is down, else undefined. */
  readonly pollFallbackMs: number | undefined;
  /** Idle workers of this store that plain enqueues may hand jobs to (`localHandoff`); null when off. */
  readonly handoff: HandoffRegistry | null;
  /** Largest payload JSON in UTF-8 bytes (the `maxPayloadBytes` store option). */
  readonly maxPayloadBytes: number;
  /** Context headers added to every enqueue (the `enqueueHeaders` store option); null: none. */
  readonly enqueueHeaders: EnqueueHeadersHook | null;
  /** Dead worker detection (the `workerLiveness` store option); null when off. */
  readonly liveness: PostgresLiveness | null;
  /** The cross-process hand-off (the `crossProcessHandoff` store option, remote-handoff.ts); null or absent when off. */
  readonly remote?: RemoteTakers | null;
}

/** Enqueues one job through `exec` (pool or transaction). The name is validated by the caller. */
export async function enqueueJob(
  ctx: PgContext,
  exec: Executor,
  queue: string,
  queueOpts: Required<QueueOpts>,
  payload: unknown,
  opts?: JobOpts,
): Promise<number> {
  const stamp = resolveJobStamp(queueOpts, opts, ctx.enqueueHeaders);
  return enqueueResolved(ctx, exec, queue, encodePayload(payload, 'payload', ctx.maxPayloadBytes), stamp);
}

/** {@link enqueueJob} with the payload already encoded and the stamp already resolved. */
export async function enqueueResolved(
  ctx: PgContext,
  exec: Executor,
  queue: string,
  text: string,
  stamp: JobWrite,
): Promise<number> {
  const wake = wakePayload(queueWakeChannel(queue));
  // Keyed jobs need the engine function (locks and look-ups with fresh snapshots); plain jobs on
  // our own connections keep the single prepared statement.
  // A keyed enqueue may not notify (a duplicate, a blocked ordering key): counted as notifying,
  // which costs at most one spurious local wake.
  if (hasLimitKey(stamp)) {
    const l = await exec.wakes.run(
      wake,
      (w) =>
        exec.run<{ id: string }>(ctx.sql.limits.enqueueCall, [
          queue,
          text,
          ...stampParams(stamp),
          w,
          ...extraParams(stamp),
          ...limitKeyParams(stamp),
        ]),
      always,
    );
    return num(l.rows[0]!.id);
  }
  const r =
    exec.prepared && !keyed(stamp)
      ? await exec.wakes.run(
          wake,
          (w) =>
            exec.run<{ id: string }>(ctx.sql.queue.enqueue, [queue, text, ...stampParams(stamp), w, stamp.headersText]),
          always,
        )
      : await exec.wakes.run(
          wake,
          (w) =>
            exec.run<{ id: string }>(ctx.sql.queue.enqueueCall, [
              queue,
              text,
              ...stampParams(stamp),
              w,
              ...extraParams(stamp),
            ]),
          always,
        );
  return num(r.rows[0]!.id);
}

export function keyed(st: JobWrite): boolean {
  return st.uniqueKey !== null || st.orderingKey !== null;
}

export function stampParams(st: JobWrite): unknown[] {
  return [
    st.priority,
    st.maxAttempts,
    st.visibilityTimeoutMs,
    st.backoffBaseMs,
    st.deadLetterRetentionMs,
    st.delayMs,
    st.runAtMs,
    st.expiresInMs,
  ];
}

/** $12..$15 of the enqueue functions. */
export function extraParams(st: JobWrite): unknown[] {
  return [st.headersText, st.uniqueKey, st.replace, st.orderingKey];
}

/** Publishes one event on a validated stream name (reserved ones included: the audit log); key null or validated non-empty. */
export async function publishEvent(
  ctx: PgContext,
  exec: Executor,
  stream: string,
  key: string | null,
  payload: unknown,
): Promise<number> {
  validateStoredName('stream', stream);
  if (key !== null) validateKey('key', key);
  return publishEventText(ctx, exec, stream, key, encodePayload(payload, 'payload', ctx.maxPayloadBytes));
}

/** {@link publishEvent} with the payload already encoded and the names validated. */
export async function publishEventText(
  ctx: PgContext,
  exec: Executor,
  stream: string,
  key: string | null,
  text: string,
): Promise<number> {
  const sql = exec.prepared ? ctx.sql.stream.publish : ctx.sql.stream.publishCall;
  const r = await exec.wakes.run(
    wakePayload(streamWakeChannel(stream)),
    (w) => exec.run<{ seq: string }>(sql, [stream, key, text, w]),
    always,
  );
  return num(r.rows[0]!.seq);
}

/** Sends a wake on a user channel (payload checked against PostgreSQL's 8000-byte limit, not carried). */
export async function notifyChannel(
  ctx: PgContext,
  exec: Executor,
  channel: string,
  payload: unknown = '',
): Promise<void> {
  validateName('channel', channel);
  if (typeof payload !== 'string')
    throw new Codec(`notify payload on channel ${JSON.stringify(channel)}`, 'must be a string');
  const bytes = utf8Length(payload);
  if (bytes > PG_NOTIFY_LIMIT) throw new PayloadTooLarge(channel, bytes, PG_NOTIFY_LIMIT);
  // The user payload is only checked, never carried: wakes carry the channel alone (SPEC §7).
  await exec.wakes.run(wakePayload(channel), (w) => exec.run(ctx.sql.notify.notify, [w]), always);
}

/**
 * Runs `sql` on the store's pool with `values` plus the wake parameter last,
 * announcing the wake through the pool's `Wakes` (same-process delivery after
 * the commit; see `OwnWakes`).
 */
export function runWaking<R>(
  ctx: PgContext,
  sql: Sql,
  values: readonly unknown[],
  wake: string,
  notified: (r: Rows<R>) => boolean,
): Promise<Rows<R>> {
  const exec = ctx.exec;
  return exec.wakes.run(wake, (w) => exec.run<R>(sql, [...values, w]), notified);
}

/** `notified` of a statement that always notifies when it succeeds. */
export function always(): boolean {
  return true;
}

/** `notified` of a statement returning `promoted` (ordering keys whose next job became head): it notified when > 0. */
export function promoted(r: Rows<object>): boolean {
  const p = (r.rows[0] as { promoted?: string | number | null } | undefined)?.promoted;
  return p !== undefined && p !== null && Number(p) > 0;
}

/**
 * `notified` that also rewinds the store's claim watermarks when it did: a statement that promoted
 * an ordering key's next job or unblocked a flow's job made a job ready with its old `run_at`,
 * behind where the claims stopped (`ClaimGate.rewind`).
 */
export function rewinding<R>(ctx: PgContext, notified: (r: Rows<R>) => boolean): (r: Rows<R>) => boolean {
  return (r) => {
    if (!notified(r)) return false;
    ctx.claims.rewind();
    return true;
  };
}

/** A row of `redrive_dead` (queue.sql.ts `retryDead`). */
export interface RedriveRow {
  moved: number | string;
  conflicts: string[] | null;
}

/** The public {@link RedriveResult} of a `redrive_dead` call. */
export function redriveResult(r: Rows<RedriveRow>): RedriveResult {
  const row = r.rows[0];
  const conflictIds = (row?.conflicts ?? []).map(num);
  return { moved: num(row?.moved ?? 0), conflicts: conflictIds.length, conflictIds };
}

/** `notified` of `redrive_dead`: it notified when it moved a job. */
export function moved(r: Rows<object>): boolean {
  return Number((r.rows[0] as { moved?: string | number | null } | undefined)?.moved ?? 0) > 0;
}

/** `notified` of a statement returning a `woke` column that is NULL when it did not notify. */
export function woke(r: Rows<object>): boolean {
  return r.rows.some((row) => {
    const w = (row as { woke?: string | null }).woke;
    return w !== null && w !== undefined;
  });
}

/** Monotone consumer checkpoint; true only when the stored offset increased. */
export async function saveConsumerOffset(
  ctx: PgContext,
  exec: Executor,
  stream: string,
  consumer: string,
  offset: number,
): Promise<boolean> {
  validateName('stream', stream);
  validateKey('consumer', consumer);
  requireOffset('offset', offset);
  const r = await exec.run(ctx.sql.stream.saveOffset, [stream, consumer, offset]);
  return r.rowCount > 0;
}
