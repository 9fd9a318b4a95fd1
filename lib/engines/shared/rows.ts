import { decodePayload } from '../../contract/codec.js';
import { decodeHeaders } from '../../contract/job-extras.js';
import type { JobInfo, JobState } from '../../contract/types.js';

/** An int8 column as a number (PostgreSQL returns int8 as text, SQLite as a number). */
export function num(v: unknown): number {
  return typeof v === 'number' ? v : Number(v);
}

export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}

/** A jobs row's columns as both engines select them, with the engine's own type `I` of its int8 columns. */
export interface JobColumns<I> {
  id: I;
  queue: string;
  state: JobState;
  payload: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  visibility_timeout_ms: I;
  backoff_base_ms: I;
  dead_letter_retention_ms: I | null;
  run_at: I;
  enqueued_at: I;
  expires_at: I | null;
  claimed_until: I | null;
  last_error: string | null;
  died_at: I | null;
  headers: string | null;
  unique_key: string | null;
  ordering_key: string | null;
  concurrency_key: string | null;
  rate_key: string | null;
}

/** A jobs row read by either engine as the `JobInfo` the API returns. */
export function toJobInfo(row: JobColumns<number | string>): JobInfo {
  return {
    id: num(row.id),
    queue: row.queue,
    state: row.state,
    payload: decodePayload(row.payload, `payload of job ${row.id}`),
    priority: row.priority,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    visibilityTimeoutMs: num(row.visibility_timeout_ms),
    backoffBaseMs: num(row.backoff_base_ms),
    deadLetterRetentionMs: numOrNull(row.dead_letter_retention_ms),
    runAt: num(row.run_at),
    enqueuedAt: num(row.enqueued_at),
    expiresAt: numOrNull(row.expires_at),
    claimedUntil: numOrNull(row.claimed_until),
    lastError: row.last_error,
    diedAt: numOrNull(row.died_at),
    headers: decodeHeaders(row.headers),
    uniqueKey: row.unique_key,
    orderingKey: row.ordering_key,
    concurrencyKey: row.concurrency_key,
    rateLimitKey: row.rate_key,
  };
}
