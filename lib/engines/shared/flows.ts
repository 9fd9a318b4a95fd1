import {
  badDependency,
  dependencyDiedError,
  flowTree,
  type ChildResult,
  type ChildPolicy,
  type FlowNode,
  type FlowPlan,
  type PlannedJob,
} from '../../contract/flows.js';
import { decodePayload } from '../../contract/codec.js';
import { num } from './rows.js';

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

/** The edges of `rows` whose dependency has ended, each with how it ended (the live ones are passed over). */
export function* endedEdges<E extends EdgeRow>(
  rows: readonly E[],
): Generator<{ e: E; out: 'completed' | 'dead' | 'cancelled' }> {
  for (const e of rows) {
    const out = edgeOutcome(e);
    if (out !== 'live') yield { e, out };
  }
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

/**
 * A checked flow's insert, the part both engines share: the existing dependencies checked before
 * any write, the queue of every job the flow names, its dependency ids and the edges of each job
 * that has dependencies. The engine runs the statements between.
 */
export class FlowWiring {
  readonly #queueOf = new Map<number, string>();
  #ids: readonly number[] = [];

  constructor(readonly plan: FlowPlan) {}

  /**
   * Checks the existing dependencies against their rows (id, queue, state; none for a missing one):
   * refuses a missing, dead or cancelled one, records the queue of each.
   */
  checkExisting(rows: readonly { id: number | string; queue: string; state: string }[]): void {
    const state = new Map(rows.map((x) => [num(x.id), x.state]));
    for (const x of rows) this.#queueOf.set(num(x.id), x.queue);
    for (const id of this.plan.existing) {
      const s = state.get(id);
      if (s === undefined) throw badDependency(id, 'missing');
      if (s === 'dead' || s === 'cancelled') throw badDependency(id, s);
    }
  }

  /** Takes the inserted jobs' ids (by plan index); gives the distinct ids of every dependency. */
  inserted(ids: readonly number[]): number[] {
    this.#ids = ids;
    this.plan.jobs.forEach((j, k) => this.#queueOf.set(ids[k]!, j.queue));
    return [...new Set(this.plan.jobs.flatMap((j) => j.deps.map((d) => this.#idOf(d))))];
  }

  /** Each inserted job that has dependencies: its id, the job, and its distinct dependencies with their queues. */
  *dependents(): Generator<{ id: number; job: PlannedJob; deps: { id: number; queue: string }[] }> {
    for (let k = 0; k < this.plan.jobs.length; k++) {
      const job = this.plan.jobs[k]!;
      if (job.deps.length === 0) continue;
      const ds = [...new Set(job.deps.map((d) => this.#idOf(d)))];
      yield { id: this.#ids[k]!, job, deps: ds.map((d) => ({ id: d, queue: this.#queueOf.get(d) ?? job.queue })) };
    }
  }

  /** The flow's tree of ids. */
  tree(): FlowNode {
    return flowTree(this.plan, this.#ids);
  }

  #idOf(d: PlannedJob['deps'][number]): number {
    return 'node' in d ? this.#ids[d.node]! : d.id;
  }
}
