import { decodePayload } from '../../contract/codec.js';
import type { StreamEvent } from '../../contract/types.js';
import { toJobInfo, type JobColumns } from '../shared/rows.js';
import type { JobStamp, JobWrite } from '../../contract/options.js';

/** A `__alkstore_jobs` row as selected by `JOB_COLUMNS`. */
export type JobRow = JobColumns<number>;

export { toJobInfo };

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
