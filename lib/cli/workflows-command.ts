import type { Store } from '../contract/types.js';
import { createWorkflows } from '../workflows/workflows.js';
import type { RunState, WorkflowRun } from '../workflows/types.js';
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
 * `alkstore workflows show ID`, `alkstore workflows cancel ID [--namespace NS]` and `alkstore workflows retry ID [--namespace NS]`:
 * reads and changes runs through a `Workflows` without a worker and without definitions (listing,
 * cancelling and re-driving need none).
 */
export async function workflowsCommand(
  store: Store,
  p: Parsed,
  sub: 'list' | 'cancel' | 'retry' | 'show',
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
              ['id', 'workflow', 'version', 'state', 'started', 'finished', 'waiting', 'error'],
              runs.map((r) => [
                r.id,
                r.workflow,
                r.version,
                r.state,
                h.iso(r.startedAt),
                h.iso(r.finishedAt),
                r.waiting ?? '',
                r.error ? oneLine(`${r.error.name}: ${r.error.message}`, 80) : '',
              ]),
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
    if (sub === 'show') {
      h.emit(run, showRun(run, h));
      return h.exit.ok;
    }
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

function oneLine(text: string, max: number): string {
  const t = text.replace(/\s+/g, ' ');
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}

/** `workflows show`: the run, its input, its steps with timings and attempts, its error with its stack. */
function showRun(run: WorkflowRun, h: WorkflowsCommandHelpers): string {
  const lines = [
    `run ${run.id}: workflow ${run.workflow} version ${run.version}, ${run.state}`,
    `started ${h.iso(run.startedAt)}${run.finishedAt === null ? '' : `, finished ${h.iso(run.finishedAt)}`}`,
    ...(run.parentId === null ? [] : [`parent ${run.parentId}`]),
    ...(run.children.length === 0 ? [] : [`children ${run.children.join(', ')}`]),
    `input ${JSON.stringify(run.input) ?? 'undefined'}`,
  ];
  if (run.state === 'completed') lines.push(`result ${JSON.stringify(run.result) ?? 'undefined'}`);
  lines.push('');
  if (run.steps.length === 0) lines.push('no journaled steps');
  else {
    let prev = run.startedAt;
    lines.push(
      table(
        ['pos', 'kind', 'name', 'state', 'attempts', 'at', '+ms', 'until'],
        run.steps.map((s) => {
          const attempts = s.failures + (s.state === 'done' && s.kind !== 'sleep' ? 1 : 0);
          const row = [
            s.position,
            s.kind,
            s.name,
            s.state,
            attempts,
            h.iso(s.at),
            Math.max(0, s.at - prev),
            s.until === null ? '' : h.iso(s.until),
          ];
          prev = s.at;
          return row;
        }),
      ),
    );
  }
  const failed = run.steps.filter((s) => s.error);
  for (const s of failed) {
    lines.push(
      '',
      `step ${s.position} ${s.kind} ${JSON.stringify(s.name)} failed: ${s.error!.name}: ${s.error!.message}`,
    );
    if (s.error!.stack) lines.push(s.error!.stack);
  }
  if (run.error) {
    lines.push('', `error ${run.error.name}${run.error.code ? ` (${run.error.code})` : ''}: ${run.error.message}`);
    if (run.error.stack) lines.push(run.error.stack);
  }
  return lines.join('\n');
}
