import { encodePayload } from './codec.js';
import { InvalidFlow } from './errors.js';
import type { EnqueueHeadersHook } from './job-extras.js';
import { resolveJobStamp, type JobOpts, type JobWrite, type QueueOpts } from './options.js';
import { requireJobId, validateName } from './validate.js';

// Job flows (SPEC §11, docs/flows.md): the input types, and the plan both engines execute. Every
// rule that needs no database is checked here, before any I/O, the same on both engines.

/**
 * What a job waiting for dependencies does when one of them dies (goes dead, or is cancelled):
 * `'fail'` (default) ends the job dead, its last error naming the dependency, and so on up the
 * flow; `'ignore'` counts the dependency as done (its result missing from `childResults()`);
 * `'continue'` counts it as done too, and `childResults()` lists it with its state and error.
 */
export type ChildPolicy = 'fail' | 'ignore' | 'continue';

/** The policies, in the order of {@link ChildPolicy}. */
export const CHILD_POLICIES: readonly ChildPolicy[] = Object.freeze(['fail', 'ignore', 'continue']);

/** Header every job a flow depends on carries: its ack records the outcome and settles its dependents in the same transaction. */
export const FLOW_HEADER = 'alkstore-flow';

/** One job of a flow (docs/flows.md). */
export interface FlowJob {
  /** The queue of this job; default: the queue of its parent (the root: the queue `enqueueFlow` is called on). */
  queue?: string;
  payload: unknown;
  /** Enqueue options; a job with dependencies may not have a `uniqueKey` or an `orderingKey`. */
  opts?: JobOpts;
  /** Name of this job inside the flow, so another job of the same flow can list it in `dependsOn`. */
  ref?: string;
  /** Jobs this job waits for, created with it; it becomes claimable when every one of them (and of `dependsOn`) is acked. */
  children?: readonly FlowJob[];
  /** More dependencies: ids of existing jobs (any queue), or `ref`s of other jobs of the same flow (a DAG). */
  dependsOn?: readonly (number | string)[];
  /** What this job does when one of its dependencies dies. Default `'fail'`. */
  onChildDead?: ChildPolicy;
}

/** What `enqueueFlow` created: the ids in the shape of the input. */
export interface FlowNode {
  readonly id: number;
  readonly queue: string;
  readonly children: readonly FlowNode[];
}

/** One dependency of a job as its handler reads it (`job.childResults()`). */
export interface ChildResult {
  readonly id: number;
  readonly queue: string;
  /** `completed`, or with `onChildDead: 'continue'` also `dead` / `cancelled`. */
  readonly state: 'completed' | 'dead' | 'cancelled';
  /** The dependency's result (absent when it returned nothing, or its record was pruned by retention). */
  readonly result?: unknown;
  /** The last error of a `dead` dependency. */
  readonly error?: string | null;
}

/** A dependency of a planned job: another job of the plan (by index) or an existing job id. */
export type PlannedDep = { readonly node: number } | { readonly id: number };

/** One job of a checked flow, in insert order (every job after the jobs of the plan it depends on). */
export interface PlannedJob {
  readonly queue: string;
  readonly text: string;
  readonly stamp: JobWrite;
  readonly deps: readonly PlannedDep[];
  readonly policy: ChildPolicy;
  /** Index of the job's place in the returned {@link FlowNode} tree: its parent's index, -1 for the root. */
  readonly parent: number;
}

/** A flow checked and resolved, ready for an engine: `jobs[root]` is the root. */
export interface FlowPlan {
  readonly jobs: readonly PlannedJob[];
  readonly root: number;
  /** Existing job ids any job depends on (deduplicated). */
  readonly existing: readonly number[];
}

/** What the plan needs from the store. */
export interface FlowEnv {
  queueOpts(queue: string): Required<QueueOpts>;
  readonly enqueueHeaders: EnqueueHeadersHook | null;
  readonly maxPayloadBytes: number;
}

/** At most this many jobs in one flow. */
export const MAX_FLOW_JOBS = 10_000;

interface Walk {
  readonly spec: FlowJob;
  readonly path: string;
  readonly queue: string;
  readonly parent: number;
  readonly children: number[];
}

/**
 * Checks a flow and resolves every job's stamp and payload before any I/O: `InvalidFlow` naming
 * the job (by path, e.g. `flow.children[1]`) and the dependency for a cycle, a self-dependency, an
 * unknown `ref`, a bad policy, or keys on a job with dependencies.
 */
export function planFlow(flow: FlowJob, rootQueue: string, env: FlowEnv): FlowPlan {
  if (flow === null || typeof flow !== 'object')
    throw new InvalidFlow('flow', 'must be an object { payload, children?, dependsOn?, onChildDead? }');
  const nodes: Walk[] = [];
  const stack: { spec: FlowJob; path: string; queue: string; parent: number }[] = [
    { spec: flow, path: 'flow', queue: rootQueue, parent: -1 },
  ];
  while (stack.length > 0) {
    const w = stack.pop()!;
    if (w.spec === null || typeof w.spec !== 'object')
      throw new InvalidFlow(w.path, 'must be an object { payload, children?, dependsOn?, onChildDead? }');
    if (nodes.length >= MAX_FLOW_JOBS) throw new InvalidFlow('flow', `has more than ${MAX_FLOW_JOBS} jobs; split it`);
    const queue = w.spec.queue === undefined ? w.queue : validateName('queue', w.spec.queue);
    const index = nodes.length;
    nodes.push({ spec: w.spec, path: w.path, queue, parent: w.parent, children: [] });
    if (w.parent >= 0) nodes[w.parent]!.children.push(index);
    const kids = w.spec.children ?? [];
    if (!Array.isArray(kids)) throw new InvalidFlow(`${w.path}.children`, 'must be an array of jobs');
    for (let i = kids.length - 1; i >= 0; i--)
      stack.push({ spec: kids[i] as FlowJob, path: `${w.path}.children[${i}]`, queue, parent: index });
  }
  // children were pushed in reverse to walk in order; restore input order.
  for (const n of nodes) n.children.sort((a, b) => a - b);

  const byRef = new Map<string, number>();
  nodes.forEach((n, i) => {
    const ref = n.spec.ref;
    if (ref === undefined) return;
    if (typeof ref !== 'string' || ref.length === 0)
      throw new InvalidFlow(`${n.path}.ref`, 'must be a non-empty string');
    if (byRef.has(ref))
      throw new InvalidFlow(
        `${n.path}.ref`,
        `${JSON.stringify(ref)} is used twice in one flow; give each job its own ref`,
      );
    byRef.set(ref, i);
  });

  const deps: PlannedDep[][] = nodes.map(() => []);
  const existing = new Set<number>();
  nodes.forEach((n, i) => {
    const seen = new Set<string>();
    const add = (d: PlannedDep): void => {
      const k = 'node' in d ? `n${d.node}` : `i${d.id}`;
      if (seen.has(k)) return;
      seen.add(k);
      deps[i]!.push(d);
    };
    for (const c of n.children) add({ node: c });
    const list = n.spec.dependsOn ?? [];
    if (!Array.isArray(list)) throw new InvalidFlow(`${n.path}.dependsOn`, 'must be an array of job ids or refs');
    list.forEach((d: unknown, k) => {
      const at = `${n.path}.dependsOn[${k}]`;
      if (typeof d === 'string') {
        const target = byRef.get(d);
        if (target === undefined)
          throw new InvalidFlow(
            at,
            `names ref ${JSON.stringify(d)}, which no job of this flow has; add a job with that ref or pass a job id`,
          );
        if (target === i)
          throw new InvalidFlow(at, `names the job itself (ref ${JSON.stringify(d)}): a job cannot depend on itself`);
        add({ node: target });
      } else {
        const id = requireJobId(at, d);
        existing.add(id);
        add({ id });
      }
    });
    const policy = n.spec.onChildDead ?? 'fail';
    if (!CHILD_POLICIES.includes(policy))
      throw new InvalidFlow(
        `${n.path}.onChildDead`,
        `must be one of ${CHILD_POLICIES.map((p) => `'${p}'`).join(', ')}`,
      );
    if (deps[i]!.length > 0 && (n.spec.opts?.uniqueKey !== undefined || n.spec.opts?.orderingKey !== undefined)) {
      throw new InvalidFlow(
        `${n.path}.opts`,
        'has a uniqueKey or orderingKey on a job with dependencies; put the key on a job without dependencies',
      );
    }
  });

  // Insert order: dependencies first (depth-first post-order); a job met again while on the path is a cycle.
  const order: number[] = [];
  const mark = new Uint8Array(nodes.length); // 0 new, 1 on the path, 2 done
  for (let start = 0; start < nodes.length; start++) {
    if (mark[start] !== 0) continue;
    const path: { node: number; next: number }[] = [{ node: start, next: 0 }];
    mark[start] = 1;
    while (path.length > 0) {
      const top = path[path.length - 1]!;
      const ds = deps[top.node]!;
      if (top.next < ds.length) {
        const d = ds[top.next++]!;
        if (!('node' in d)) continue;
        if (mark[d.node] === 1)
          throw new InvalidFlow(
            `${nodes[d.node]!.path}`,
            `is in a cycle of dependencies (through ${nodes[top.node]!.path}); a flow must be acyclic`,
          );
        if (mark[d.node] === 0) {
          mark[d.node] = 1;
          path.push({ node: d.node, next: 0 });
        }
      } else {
        mark[top.node] = 2;
        order.push(top.node);
        path.pop();
      }
    }
  }
  const pos = new Map<number, number>(order.map((n, k) => [n, k]));
  const dependedOn = new Set<number>();
  for (const ds of deps) for (const d of ds) if ('node' in d) dependedOn.add(d.node);
  const jobs: PlannedJob[] = order.map((i) => {
    const n = nodes[i]!;
    // A job something depends on records its outcome: its ack settles the dependents.
    const opts: JobOpts = dependedOn.has(i)
      ? { ...n.spec.opts, headers: { ...n.spec.opts?.headers, [FLOW_HEADER]: '1' } }
      : { ...n.spec.opts };
    const stamp = resolveJobStamp(env.queueOpts(n.queue), opts, env.enqueueHeaders);
    return {
      queue: n.queue,
      text: encodePayload(n.spec.payload, `${n.path}.payload`, env.maxPayloadBytes),
      stamp,
      deps: deps[i]!.map((d) => ('node' in d ? { node: pos.get(d.node)! } : d)),
      policy: n.spec.onChildDead ?? 'fail',
      parent: n.parent < 0 ? -1 : pos.get(n.parent)!,
    };
  });
  return { jobs, root: pos.get(0)!, existing: [...existing] };
}

/** The {@link FlowNode} tree of a plan whose jobs got `ids` (in plan order). */
export function flowTree(plan: FlowPlan, ids: readonly number[]): FlowNode {
  const kids: number[][] = plan.jobs.map(() => []);
  plan.jobs.forEach((j, k) => {
    if (j.parent >= 0) kids[j.parent]!.push(k);
  });
  const build = (k: number): FlowNode => ({
    id: ids[k]!,
    queue: plan.jobs[k]!.queue,
    children: kids[k]!.sort((a, b) => a - b).map(build),
  });
  return build(plan.root);
}

/** `dependsOn` / `onChildDead` given to `enqueue`: the one-job flow they mean. */
export function dependsOnFlow(
  payload: unknown,
  opts: JobOpts & { dependsOn?: readonly number[]; onChildDead?: ChildPolicy },
): FlowJob {
  const { dependsOn, onChildDead, ...rest } = opts;
  if (dependsOn !== undefined && !Array.isArray(dependsOn))
    throw new InvalidFlow('dependsOn', 'must be an array of job ids');
  return { payload, opts: rest, dependsOn: dependsOn ?? [], ...(onChildDead === undefined ? {} : { onChildDead }) };
}

/** Whether enqueue options ask for dependencies (then the enqueue is a one-job flow). */
export function hasDependencies(
  opts: unknown,
): opts is JobOpts & { dependsOn?: readonly number[]; onChildDead?: ChildPolicy } {
  return (
    opts !== null &&
    typeof opts === 'object' &&
    ((opts as { dependsOn?: unknown }).dependsOn !== undefined ||
      (opts as { onChildDead?: unknown }).onChildDead !== undefined)
  );
}

/** The dependency the last error of a job failed by its flow names, in one wording on both engines. */
export function dependencyDiedError(
  depId: number,
  depQueue: string,
  outcome: 'dead' | 'cancelled',
  depError: string | null,
): string {
  const how = outcome === 'dead' ? `died${depError === null ? '' : `: ${depError}`}` : 'was cancelled';
  return `dependency job ${depId} (queue ${JSON.stringify(depQueue)}) ${how}`;
}

/** The refusal of an existing dependency id that cannot be waited for, the same on both engines. */
export function badDependency(id: number, problem: 'missing' | 'dead' | 'cancelled'): InvalidFlow {
  const why =
    problem === 'missing'
      ? 'is not a job of this store (never enqueued, or its record was pruned); pass the id of a live or completed job'
      : `is already ${problem}: a job depending on it could never run; redrive it first or leave it out`;
  return new InvalidFlow(`dependsOn ${id}`, why);
}
