import { dependencyDiedError, type ChildResult, type ChildPolicy } from '../../contract/flows.js';
import { decodePayload } from '../../contract/codec.js';

// Job flows, the part both engines share (docs/flows.md): how an edge's dependency ended, and what a
// handler reads of its dependencies. The engines' flows.ts hold the statements.

/** An unsettled edge as the engines read it, with its dependency's row states. */
export interface EdgeRow {
  readonly job_id: number | string;
  readonly dep_id: number | string;
  readonly dep_queue: string;
  /** The dependency's state in the jobs table (null: not there). */
  readonly jstate: string | null;
  readonly last_error: string | null;
  /** The dependency's outcome record state (null: none). */
  readonly ostate: string | null;
}

/** How an edge's dependency ended, or `live` while it may still run. A dependency gone without a record (acked plainly, pruned) completed. */
export function edgeOutcome(e: Pick<EdgeRow, 'jstate' | 'ostate'>): 'live' | 'completed' | 'dead' | 'cancelled' {
  if (e.jstate === 'pending' || e.jstate === 'processing') return 'live';
  if (e.jstate === 'dead') return 'dead';
  return e.ostate === 'cancelled' ? 'cancelled' : 'completed';
}

/** The error a waiting job dies with when the dependency of edge `e` ended `out` (dead or cancelled). */
export function edgeDiedError(e: EdgeRow, out: 'dead' | 'cancelled' | 'completed' | 'live'): string {
  return dependencyDiedError(Number(e.dep_id), e.dep_queue, out === 'cancelled' ? 'cancelled' : 'dead', e.last_error);
}

/** A row of the child-results read. */
export interface ChildRow {
  readonly dep_id: number | string;
  readonly dep_queue: string;
  readonly outcome: string | null;
  readonly ostate: string | null;
  readonly result: string | null;
  readonly jstate: string | null;
  readonly last_error: string | null;
  readonly policy: ChildPolicy | null;
}

/** What `job.childResults()` returns of the rows: every completed dependency; the dead and cancelled ones too under `continue`. */
export function childResults(rows: readonly ChildRow[]): ChildResult[] {
  const out: ChildResult[] = [];
  for (const r of rows) {
    const id = Number(r.dep_id);
    const state = r.outcome === 'dead' || r.outcome === 'cancelled' ? r.outcome : edgeOutcome(r);
    if (state === 'live') continue;
    if (state === 'completed') {
      out.push(
        r.result === null
          ? { id, queue: r.dep_queue, state }
          : { id, queue: r.dep_queue, state, result: decodePayload(r.result, `result of job ${id}`) },
      );
    } else if (r.policy === 'continue') {
      out.push(
        state === 'dead' ? { id, queue: r.dep_queue, state, error: r.last_error } : { id, queue: r.dep_queue, state },
      );
    }
  }
  return out;
}
