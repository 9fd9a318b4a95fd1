import { FLOW_VIEW_EDGES, type FlowEdge, type FlowView } from '../contract/admin.js';
import type { ChildPolicy } from '../contract/flows.js';
import { InvalidArgument } from '../contract/errors.js';
import type { JobInfo } from '../contract/types.js';

// The shared half of `StoreAdmin.flowOf` / `waitingOn`: both engines read the same rows and shape them here.

/** A row of the flow-edges statement (bigint columns may come back as strings on PostgreSQL). */
export interface FlowEdgeRow {
  job_id: number | string;
  dep_id: number | string;
  dep_queue: string;
  state: string | null;
  last_error: string | null;
  policy: string | null;
}

/** How many ids `waitingOn` takes at once (one page of a list). */
export const WAITING_ON_IDS = 1000;

/** Checks the ids of `waitingOn` before any I/O. */
export function requireWaitingIds(ids: readonly number[]): number[] {
  if (!Array.isArray(ids) || ids.length > WAITING_ON_IDS || !ids.every((x) => Number.isSafeInteger(x) && x > 0))
    throw new InvalidArgument('ids', `must be an array of at most ${WAITING_ON_IDS} job ids (positive integers)`);
  return [...ids];
}

function policyOf(p: string | null | undefined): ChildPolicy | null {
  return p === 'fail' || p === 'ignore' || p === 'continue' ? p : null;
}

/** The rows of a job's flow as a {@link FlowView}; `rows` was read with a limit of {@link FLOW_VIEW_EDGES} + 1. */
export function toFlowView(
  rows: readonly FlowEdgeRow[],
  parents: readonly { id: number | string; queue: string }[],
  wait: { pending: number | string; policy: string } | undefined,
): FlowView {
  const edges: FlowEdge[] = rows.slice(0, FLOW_VIEW_EDGES).map((r) => ({
    parent: Number(r.job_id),
    id: Number(r.dep_id),
    queue: r.dep_queue,
    state: (r.state ?? 'unknown') as JobInfo['state'] | 'unknown',
    lastError: r.last_error,
    policy: policyOf(r.policy),
  }));
  return {
    parents: parents.map((p) => ({ id: Number(p.id), queue: p.queue })),
    policy: policyOf(wait?.policy),
    pending: Math.max(0, Number(wait?.pending ?? 0)),
    edges,
    truncated: rows.length > FLOW_VIEW_EDGES,
  };
}
