import { decodePayload } from '../../contract/codec.js';
import type { CancelTarget } from '../../contract/results.js';
import type { JobInfo } from '../../contract/types.js';
import type { ClaimRef } from './queue-driver.js';
import { numOrNull, toJobInfo, type JobColumns } from './rows.js';

// Results, progress and cancellation (SPEC §11), the part both engines share: how a job row with its
// outcome record reads back. The engines' outcomes.ts hold the statements.

/** A claim as the fenced statements take it. */
export type Claim = Pick<ClaimRef, 'id' | 'claimToken'>;

/** An ack with a result: the claim, its result and last progress (JSON text), and whether it settles a flow's dependents. */
export interface OutcomeAck {
  job: Claim;
  resultText: string | null;
  progressText: string | null;
  settles: boolean;
}

/** A cancel's target as the engines' statements take it: one job by id, or the live jobs of a unique or ordering key. */
export type CancelBy = { by: 'id'; id: number } | { by: 'uniqueKey' | 'orderingKey'; key: string };

export function cancelBy(t: CancelTarget): CancelBy {
  if ('id' in t) return { by: 'id', id: t.id };
  return 'uniqueKey' in t ? { by: 'uniqueKey', key: t.uniqueKey } : { by: 'orderingKey', key: t.orderingKey };
}

/** A row of `getJobFull` (and of the admin search): the job, or its outcome record, with `I` the engine's int8 type. */
export interface FullColumns<I> extends JobColumns<I> {
  progress: string | null;
  result: string | null;
  finished_at: I | null;
}

/** The outcome fields of a full row: result, progress, finishedAt (each absent when null). */
export function outcomeExtras(row: Pick<FullColumns<number | string>, 'id' | 'result' | 'progress' | 'finished_at'>): {
  result?: unknown;
  progress?: unknown;
  finishedAt?: number;
} {
  const extra: { result?: unknown; progress?: unknown; finishedAt?: number } = {};
  if (row.result !== null) extra.result = decodePayload(row.result, `result of job ${row.id}`);
  if (row.progress !== null) extra.progress = decodePayload(row.progress, `progress of job ${row.id}`);
  const finished = numOrNull(row.finished_at);
  if (finished !== null) extra.finishedAt = finished;
  return extra;
}

/** A full row as `JobInfo` with its outcome fields. */
export function fullJobInfo(row: FullColumns<number | string>): JobInfo {
  return { ...toJobInfo(row), ...outcomeExtras(row) };
}

/** A full row as `queue.getJob(id)` returns it: live, dead, or an outcome record (null: none). */
export function jobWithOutcome(row: FullColumns<number | string> | undefined): JobInfo | null {
  return row ? fullJobInfo(row) : null;
}
