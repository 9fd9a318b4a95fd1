import type { Store } from '../contract/types.js';
import { createWorkflows } from '../workflows/workflows.js';
import type { RunState } from '../workflows/types.js';
import type { Parsed } from './cli.js';
import { Outcome, UsageError } from './open-db.js';
import { table } from './table.js';

const STATES: readonly RunState[] = ['running', 'completed', 'failed', 'cancelled'];

/** What `workflows` needs of the CLI's helpers. */
export interface WorkflowsCommandHelpers {
  iso(ms: number | null): string;
  emit(json: unknown, human: string): void;
  /** Exit codes: ok and notFound. */
  readonly exit: { readonly ok: number; readonly notFound: number };
}

/**
 * `alkstore workflows list [--status S] [--name W] [--namespace NS] [--limit N]`,
 * `alkstore workflows cancel ID [--namespace NS]` and `alkstore workflows retry ID [--namespace NS]`:
 * reads and changes runs through a `Workflows` without a worker and without definitions (listing,
 * cancelling and re-driving need none).
 */
export async function workflowsCommand(
  store: Store,
  p: Parsed,
  sub: 'list' | 'cancel' | 'retry',
  id: string | undefined,
  h: WorkflowsCommandHelpers,
): Promise<number> {
  if (p.status !== undefined && !STATES.includes(p.status as RunState))
    throw new UsageError(`--status must be one of ${STATES.join(', ')}, got ${JSON.stringify(p.status)}`);
  let w;
  try {
    w = createWorkflows(store, {
      workflows: [],
      worker: false,
      tracing: false,
      ...(p.namespace === undefined ? {} : { namespace: p.namespace }),
    });
  } catch (err) {
    throw new UsageError(`--namespace: ${err instanceof Error ? err.message : String(err)}`);
  }
  try {
    if (sub === 'list') {
      const runs = await w.list({
        limit: p.limit,
        ...(p.status === undefined ? {} : { state: p.status as RunState }),
        ...(p.workflowName === undefined ? {} : { workflow: p.workflowName }),
      });
      h.emit(
        runs,
        runs.length === 0
          ? 'no workflow runs'
          : table(
              ['id', 'workflow', 'version', 'state', 'started', 'finished'],
              runs.map((r) => [r.id, r.workflow, r.version, r.state, h.iso(r.startedAt), h.iso(r.finishedAt)]),
            ),
      );
      return h.exit.ok;
    }
    const run = await w.getStatus(id!);
    if (!run)
      throw new Outcome(
        h.exit.notFound,
        `no workflow run ${JSON.stringify(id)}${p.namespace === undefined ? '' : ` in namespace ${JSON.stringify(p.namespace)}`}`,
      );
    if (sub === 'cancel') {
      if (!(await w.cancel(id!)))
        throw new Outcome(
          h.exit.notFound,
          `workflow run ${JSON.stringify(id)} is ${run.state}, not running: nothing to cancel`,
        );
      h.emit({ id, cancelled: true }, `cancelled workflow run ${id}`);
      return h.exit.ok;
    }
    if (!(await w.retry(id!)))
      throw new Outcome(
        h.exit.notFound,
        `workflow run ${JSON.stringify(id)} is ${run.state}, not failed: nothing to retry`,
      );
    h.emit({ id, retried: true }, `retrying workflow run ${id} from its first failed step`);
    return h.exit.ok;
  } finally {
    await w.close();
  }
}
