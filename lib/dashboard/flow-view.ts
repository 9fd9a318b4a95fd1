import type { FlowEdge, FlowView, JobDetail } from '../contract/admin.js';
import type { ChildPolicy } from '../contract/flows.js';
import { html, type SafeHtml } from './html.js';
import { action, link, type PageCtx } from './layout.js';

/** What a policy does, in the words of docs/flows.md. */
export const POLICY_TEXT: Record<ChildPolicy, string> = {
  fail: 'fail: a dead dependency ends this job dead too',
  ignore: 'ignore: a dead dependency counts as done, its result left out',
  continue: 'continue: a dead dependency counts as done, listed with its error',
};

/** The state a list shows for a job: "waiting on N children" for a job held back by its flow. */
export function listState(state: string, waiting: number | undefined): string {
  if (state === 'pending' && waiting !== undefined && waiting > 0)
    return `waiting on ${waiting} child${waiting === 1 ? '' : 'ren'}`;
  return state;
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 160 ? `${line.slice(0, 160)}…` : line;
}

function stateClass(state: FlowEdge['state']): string {
  return state === 'dead' ? 'dead' : state === 'completed' ? 'ok' : state === 'cancelled' ? 'warn' : '';
}

/** One dependency and, below it, its own dependencies (each job once, even where the flow is a DAG). */
function node(ctx: PageCtx, e: FlowEdge, byParent: Map<number, FlowEdge[]>, seen: Set<number>): SafeHtml {
  const again = seen.has(e.id);
  seen.add(e.id);
  const below = again ? [] : (byParent.get(e.id) ?? []);
  return html`<li data-flow-job="${e.id}" data-state="${e.state}">
    <a href="${link(ctx, 'job', { queue: e.queue, id: String(e.id) })}">${e.queue} #${e.id}</a>
    <span class="${stateClass(e.state)}">${e.state}</span
    >${e.policy ? html` <small>(onChildDead ${e.policy})</small>` : ''}${
      e.state === 'dead' && e.lastError ? html` <code class="error">${firstLine(e.lastError)}</code>` : ''
    }${again ? html` <small>(shown above)</small>` : ''}${
      below.length > 0
        ? html`<ul>
            ${below.map((c) => node(ctx, c, byParent, seen))}
          </ul>`
        : ''
    }
  </li>`;
}

/** The flow section of a job page: its parents, its policy, its dependency tree, and "Cancel flow". */
export function flowSection(ctx: PageCtx, job: JobDetail, flow: FlowView): SafeHtml {
  if (flow.parents.length === 0 && flow.edges.length === 0) return html``;
  const byParent = new Map<number, FlowEdge[]>();
  for (const e of flow.edges) byParent.set(e.parent, [...(byParent.get(e.parent) ?? []), e]);
  for (const list of byParent.values()) list.sort((a, b) => a.id - b.id);
  const direct = byParent.get(job.id) ?? [];
  const dead = flow.edges.filter((e) => e.state === 'dead' || e.state === 'cancelled');
  const seen = new Set<number>();
  const live = job.state === 'pending' || job.state === 'processing';
  const cancel =
    live && flow.edges.length > 0
      ? action(ctx, 'cancel-flow', 'Cancel flow', { queue: job.queue, id: job.id, back: 'job' }, true)
      : html``;
  return html`<section id="flow">
    <h2>Flow</h2>
    ${
      flow.parents.length > 0
        ? html`<p id="flow-parents">
            Waited for by:
            ${flow.parents.map((p) => html`<a href="${link(ctx, 'job', { queue: p.queue, id: String(p.id) })}">${p.queue} #${p.id}</a> `)}
          </p>`
        : ''
    }
    ${
      direct.length > 0
        ? html`<p id="flow-summary">
              ${flow.pending > 0 ? html`Waiting on <b>${flow.pending}</b> of ${direct.length} children.` : html`${direct.length} children.`}
              On a dead child:
              <span id="flow-policy">${flow.policy ? POLICY_TEXT[flow.policy] : 'fail (default)'}</span>.
              ${dead.length > 0 ? html`<span class="dead" id="flow-dead">${dead.length} dead or cancelled in the flow.</span>` : ''}
            </p>
            <ul class="flow" id="flow-tree">
              ${direct.map((e) => node(ctx, e, byParent, seen))}
            </ul>
            ${flow.truncated ? html`<p class="note">The flow is larger: only its first ${flow.edges.length} dependencies are shown.</p>` : ''}
            ${cancel}`
        : ''
    }
  </section>`;
}
