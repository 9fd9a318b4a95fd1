import { decodePayload } from '../../contract/codec.js';
import type { JobInfo, JobState, StreamEvent } from '../../contract/types.js';
import { decodeHeaders } from '../../contract/job-extras.js';
import type { JobStamp, JobWrite } from '../../contract/options.js';

/** A `__alkstore_jobs` row as selected by `JOB_COLUMNS`. */
export interface JobRow {
  id: number;
  queue: string;
  state: JobState;
  payload: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  visibility_timeout_ms: number;
  backoff_base_ms: number;
  dead_letter_retention_ms: number | null;
  run_at: number;
  enqueued_at: number;
  expires_at: number | null;
  claimed_until: number | null;
  last_error: string | null;
  died_at: number | null;
  headers: string | null;
  unique_key: string | null;
  ordering_key: string | null;
  concurrency_key: string | null;
  rate_key: string | null;
}

export function toJobInfo(r: JobRow): JobInfo {
  return {
    id: r.id,
    queue: r.queue,
    state: r.state,
    payload: decodePayload(r.payload, `payload of job ${r.id}`),
    priority: r.priority,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    visibilityTimeoutMs: r.visibility_timeout_ms,
    backoffBaseMs: r.backoff_base_ms,
    deadLetterRetentionMs: r.dead_letter_retention_ms,
    runAt: r.run_at,
    enqueuedAt: r.enqueued_at,
    expiresAt: r.expires_at,
    claimedUntil: r.claimed_until,
    lastError: r.last_error,
    diedAt: r.died_at,
    headers: decodeHeaders(r.headers),
    uniqueKey: r.unique_key,
    orderingKey: r.ordering_key,
    concurrencyKey: r.concurrency_key,
    rateLimitKey: r.rate_key,
  };
}

/** The ready time a stamp asks for, against the database's now. */
export function stampRunAt(stamp: JobStamp, now: number): number {
  return stamp.delayMs !== null ? now + stamp.delayMs : (stamp.runAtMs ?? now);
}

/** Parameters of `INSERT_JOB` for one payload, resolved against the database's now. */
export function jobInsertParams(
  queue: string,
  payloadText: string,
  stamp: JobWrite,
  now: number,
  blocked: boolean,
): unknown[] {
  const expiresAt = stamp.expiresInMs !== null ? now + stamp.expiresInMs : null;
  return [
    queue,
    payloadText,
    stamp.priority,
    stamp.maxAttempts,
    stamp.visibilityTimeoutMs,
    stamp.backoffBaseMs,
    stamp.deadLetterRetentionMs,
    stampRunAt(stamp, now),
    now,
    expiresAt,
    stamp.headersText,
    stamp.uniqueKey,
    stamp.orderingKey,
    blocked ? 1 : 0,
    stamp.concurrencyKey,
    stamp.rateLimitKey,
  ];
}

/** A `__alkstore_events` row. */
export interface EventRow {
  seq: number;
  key: string | null;
  payload: string;
  created_at: number;
}

export function toStreamEvent(stream: string, r: EventRow): StreamEvent {
  return {
    offset: r.seq,
    stream,
    key: r.key,
    payload: decodePayload(r.payload, `payload of event ${r.seq} on stream ${JSON.stringify(stream)}`),
    createdAt: r.created_at,
  };
}
