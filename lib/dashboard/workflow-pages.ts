import { WORKFLOWS_QUEUE_PREFIX } from '../contract/names.js';
import type { Store } from '../contract/types.js';
import type { RunState, RunSummary, WorkflowRun } from '../workflows/types.js';
import { createWorkflows, type Workflows } from '../workflows/workflows.js';
import { journalLines, namesOf, type Entry, type JournalLine } from '../workflows/journal.js';
import { runNamespaces } from '../workflows/runs.js';
import { workflowSqlOf } from '../workflows/sql-seam.js';
import { writeAudit, type AuditEntry } from './audit.js';
import { formBody, FormTooLarge } from './form-body.js';
import { html } from './html.js';
import { layout, link, live, payloadText, when, type PageCtx } from './layout.js';
import { messagePage } from './pages.js';
import type { DashboardReply, DashboardRequest } from './dashboard.service.js';

// The dashboard's workflow pages (`<mount>/workflows`, `<mount>/workflow`, POST `<mount>/workflow-action`),
// reached through the dashboard's catch-all route so that the route table only delegates to them. They
// read and change runs through a `Workflows` without a worker and without definitions.

const STATES: readonly RunState[] = ['running', 'completed', 'failed', 'cancelled'];
const DEFAULT_NAMESPACE = 'alkstore.workflows';
/** Rows of the runs list. */
const LIST_LIMIT = 200;
/** Journal entries shown on a run page. */
const JOURNAL_LIMIT = 500;

/** What the dashboard service hands the workflow pages: its request checks and its reply builders. */
export interface WorkflowPagesKit {
  readonly store: Store;
  readonly req: DashboardRequest;
  readonly ctx: PageCtx;
  readonly actor: string;
  /** The CSRF token and same-origin checks of the dashboard's own actions. */
  csrfOk(token: string | undefined): boolean;
  readonly onAudit: ((e: AuditEntry) => void) | null;
  reply(status: number, body: string): DashboardReply;
  redirect(location: string): DashboardReply;
}

function str(source: unknown, name: string): string | undefined {
  const v = source && typeof source === 'object' ? (source as Record<string, unknown>)[name] : undefined;
  return typeof v === 'string' && v.length > 0 && v.length <= 2048 ? v : undefined;
}

/** The path under the mount (`workflows`, `workflow`, `workflow-action`), or null for another page. */
function routeOf(req: DashboardRequest, base: string): string | null {
  const path = new URL(req.originalUrl ?? req.url, 'http://dashboard').pathname;
  const rest = path.startsWith(`${base}/`) ? path.slice(base.length + 1) : null;
  return rest === 'workflows' || rest === 'workflow' || rest === 'workflow-action' ? rest : null;
}

/**
 * The namespaces to offer: those with runs (their counts), and those whose queue the store knows
 * (live jobs, recent throughput, settings). A namespace whose runs are all parked has no job, and its
 * throughput minutes may not be written yet or may be past their day: its counts still name it.
 */
async function namespaces(store: Store): Promise<string[]> {
  const sql = workflowSqlOf(store);
  const [names, withRuns] = await Promise.all([store.admin().queueNames(), sql ? runNamespaces(sql) : []]);
  const found = names
    .filter((n) => n.startsWith(WORKFLOWS_QUEUE_PREFIX))
    .map((n) => n.slice(WORKFLOWS_QUEUE_PREFIX.length));
  return [...new Set([DEFAULT_NAMESPACE, ...found, ...withRuns])].sort();
}

async function withWorkflows<T>(store: Store, ns: string, fn: (w: Workflows) => Promise<T>): Promise<T> {
  const w = createWorkflows(store, { workflows: [], worker: false, tracing: false, namespace: ns });
  try {
    return await fn(w);
  } finally {
    await w.close();
  }
}

/**
 * Serves a workflow page when the request is for one, else resolves null (the caller's 404). GET
 * `workflows?ns=&state=&name=`: the runs of a namespace with a status filter; GET `workflow?ns=&id=`:
 * one run with its step timeline and journal; POST `workflow-action` (admin, CSRF checked, confirmed,
 * audited): `cancel` or `retry` a run.
 */
export async function workflowPages(kit: WorkflowPagesKit): Promise<DashboardReply | null> {
  const { ctx, req, store } = kit;
  const route = routeOf(req, ctx.base);
  if (route === null) return null;
  try {
    if (route === 'workflow-action') {
      if (req.method !== 'POST')
        return kit.reply(405, messagePage(ctx, 'Method not allowed', 'Workflow actions are POST forms.'));
      return await workflowAction(kit);
    }
    const ns = str(req.query, 'ns') ?? DEFAULT_NAMESPACE;
    if (route === 'workflows') {
      const stateText = str(req.query, 'state');
      if (stateText !== undefined && !STATES.includes(stateText as RunState))
        return kit.reply(400, messagePage(ctx, 'Bad request', `state must be one of ${STATES.join(', ')}`));
      const name = str(req.query, 'name');
      const after = str(req.query, 'after');
      const [all, [page, counts]] = await Promise.all([
        namespaces(store),
        withWorkflows(store, ns, (w) =>
          Promise.all([
            w.listPage({
              limit: LIST_LIMIT,
              order: 'desc',
              ...(after ? { after } : {}),
              ...(stateText ? { state: stateText as RunState } : {}),
              ...(name ? { workflow: name } : {}),
            }),
            w.counts(),
          ]),
        ),
      ]);
      return kit.reply(
        200,
        runsPage(ctx, ns, all, stateText as RunState | undefined, name, page.runs, {
          counts,
          next: page.next,
          paged: after !== undefined,
        }),
      );
    }
    const id = str(req.query, 'id');
    if (!id) return kit.reply(400, messagePage(ctx, 'Bad request', 'id (the run) is required'));
    const found = await withWorkflows(store, ns, async (w) => {
      const run = await w.getStatus(id);
      return run ? { run, journal: await journalLines(store, namesOf(ns), id, JOURNAL_LIMIT) } : null;
    });
    if (!found)
      return kit.reply(
        404,
        messagePage(
          ctx,
          'Not found',
          `Namespace ${JSON.stringify(ns)} has no workflow run ${JSON.stringify(id)} (never started, or pruned after its retention).`,
        ),
      );
    const wf = str(req.query, 'wf');
    const done =
      wf === 'cancel' || wf === 'retry' || wf === 'signal'
        ? { action: wf, ok: str(req.query, 'ok') === '1' }
        : undefined;
    return kit.reply(200, runPage(ctx, ns, found.run, found.journal, done));
  } catch (err) {
    if (
      err instanceof Error &&
      (err.name === 'InvalidName' ||
        err.name === 'ReservedName' ||
        err.name === 'InvalidOption' ||
        err.name === 'InvalidArgument')
    ) {
      return kit.reply(400, messagePage(ctx, 'Bad request', err.message));
    }
    throw err;
  }
}

async function workflowAction(kit: WorkflowPagesKit): Promise<DashboardReply> {
  const { ctx, store } = kit;
  if (ctx.readOnly)
    return kit.reply(403, messagePage(ctx, 'Read-only', 'This dashboard is read-only for you: actions are disabled.'));
  let body: unknown;
  try {
    body = await formBody(kit.req);
  } catch (err) {
    if (err instanceof FormTooLarge) return kit.reply(413, messagePage(ctx, 'Form too large', err.message));
    throw err;
  }
  if (!kit.csrfOk(str(body, 'csrf')))
    return kit.reply(
      403,
      messagePage(
        ctx,
        'Refused',
        'The form is stale or came from another site (CSRF check failed). Reload the page and try again.',
      ),
    );
  const action = str(body, 'action');
  const ns = str(body, 'ns') ?? DEFAULT_NAMESPACE;
  const id = str(body, 'id');
  if ((action !== 'cancel' && action !== 'retry' && action !== 'signal') || !id)
    return kit.reply(400, messagePage(ctx, 'Bad request', 'action must be cancel, retry or signal, with the run id'));
  const back = link(ctx, 'workflow', { ns, id });
  const signalName = str(body, 'signal');
  const dataText = str(body, 'data') ?? 'null';
  let data: unknown = null;
  if (action === 'signal') {
    if (!signalName) return kit.reply(400, messagePage(ctx, 'Bad request', 'signal (the signal name) is required'));
    try {
      data = JSON.parse(dataText) as unknown;
    } catch (err) {
      return kit.reply(
        400,
        messagePage(
          ctx,
          'Bad request',
          `data must be JSON (${err instanceof Error ? err.message : String(err)}): write "text" with quotes for a string`,
        ),
      );
    }
  }
  if (str(body, 'confirm') !== 'yes') {
    const question =
      action === 'cancel'
        ? `Cancel workflow run ${id} (and its child runs)? Its running step is aborted and no further step starts.`
        : action === 'retry'
          ? `Retry failed workflow run ${id} from its first failed step?`
          : `Send signal ${JSON.stringify(signalName)} with data ${dataText} to workflow run ${id}?`;
    const signalFields =
      action === 'signal'
        ? html`<input type="hidden" name="signal" value="${signalName ?? ''}" /><input
              type="hidden"
              name="data"
              value="${dataText}"
            />`
        : '';
    const form = html`<div class="confirm">
      <p>${question}</p>
      <form method="post" action="${ctx.base}/workflow-action">
        <input type="hidden" name="csrf" value="${ctx.csrf}" /><input
          type="hidden"
          name="action"
          value="${action}"
        /><input type="hidden" name="ns" value="${ns}" /><input type="hidden" name="id" value="${id}" /><input
          type="hidden"
          name="confirm"
          value="yes"
        />${signalFields} <button type="submit" class="danger" id="confirm">Yes, do it</button>
        <a href="${back}">Cancel</a>
      </form>
    </div>`;
    return kit.reply(200, layout(ctx, 'Confirm', '', form));
  }
  const done = await withWorkflows(store, ns, async (w) => {
    if (action === 'cancel') return w.cancel(id);
    if (action === 'retry') return w.retry(id);
    const run = await w.getStatus(id);
    if (!run || run.state !== 'running') return false;
    await w.signal(id, signalName!, data);
    return true;
  });
  const at = await store.now();
  await writeAudit(
    store,
    {
      at,
      actor: kit.actor,
      role: 'admin',
      action: `workflow-${action}`,
      queue: `${WORKFLOWS_QUEUE_PREFIX}${ns}`,
      schedule: null,
      jobs: [],
      count: done ? 1 : 0,
      filter: action === 'signal' ? `run ${id} signal ${signalName!}` : `run ${id}`,
      op: null,
    },
    kit.onAudit,
  );
  return kit.redirect(`${back}&wf=${action}&ok=${done ? 1 : 0}`);
}

function tabs(
  ctx: PageCtx,
  ns: string,
  all: readonly string[],
  state: RunState | undefined,
  name: string | undefined,
  counts: Record<RunState, number> | null,
) {
  const nsLinks = all.map(
    (n) => html`<a href="${link(ctx, 'workflows', { ns: n })}" class="${n === ns ? 'on' : ''}">${n}</a>`,
  );
  const stateLinks = [undefined, ...STATES].map(
    (s) =>
      html`<a
        href="${link(ctx, 'workflows', { ns, state: s, name })}"
        class="${s === state ? 'on' : ''}"
        data-state="${s ?? 'all'}"
        >${s ?? 'all'}${counts && s ? html` <span class="count" data-count="${s}">${counts[s]}</span>` : ''}</a
      >`,
  );
  return html`<nav class="states" id="namespaces">Namespace: ${nsLinks}</nav>
    <nav class="states" id="states">Status: ${stateLinks}</nav>`;
}

/** What a running run waits for, in words ("" for none). */
function waitingText(r: RunSummary, now: number): string {
  if (r.state !== 'running' || r.waiting === null) return '';
  if (r.waiting.startsWith('signal:')) return `waiting for signal ${r.waiting.slice('signal:'.length)}`;
  if (r.waiting === 'children') return 'waiting for child runs';
  if (r.wakeAt !== null && r.wakeAt > now)
    return r.waiting === 'retry' ? 'retrying a step' : r.waiting === 'sleep' ? 'sleeping' : '';
  return '';
}

/**
 * A page of the runs of one namespace, newest start first, with status and name filters, the counts
 * per state, and a link to the next page (keyset: `after` is the page's `next` cursor).
 */
export function runsPage(
  ctx: PageCtx,
  ns: string,
  all: readonly string[],
  state: RunState | undefined,
  name: string | undefined,
  runs: readonly RunSummary[],
  page: { counts: Record<RunState, number> | null; next: string | null; paged: boolean } = {
    counts: null,
    next: null,
    paged: false,
  },
): string {
  const shown = runs.slice(0, LIST_LIMIT);
  const rows = shown.map(
    (r) =>
      html`<tr data-run="${r.id}" data-state="${r.state}">
        <td><a href="${link(ctx, 'workflow', { ns, id: r.id })}">${r.id}</a></td>
        <td>${r.workflow}</td>
        <td class="n">${r.version}</td>
        <td class="${r.state === 'failed' ? 'dead' : ''}">${r.state}</td>
        <td data-waiting="${r.waiting ?? ''}">${waitingText(r, ctx.now)}</td>
        <td>${when(r.startedAt, ctx.now)}</td>
        <td>${when(r.finishedAt, ctx.now)}</td>
        <td class="dead">${r.error ? `${r.error.name}: ${r.error.message}`.slice(0, 160) : ''}</td>
      </tr>`,
  );
  const filter = html`<form class="search" method="get" action="${link(ctx, 'workflows')}">
    <input
      type="hidden"
      name="ns"
      value="${ns}"
    />${state ? html`<input type="hidden" name="state" value="${state}" />` : ''}
    <label>Workflow<input type="text" name="name" value="${name ?? ''}" placeholder="order" /></label
    ><button type="submit">Filter</button>
  </form>`;
  const pager = html`<p class="pager">
    ${page.paged ? html`<a href="${link(ctx, 'workflows', { ns, state, name })}" id="newest">Newest runs</a> ` : ''}${
      page.next
        ? html`<a href="${link(ctx, 'workflows', { ns, state, name, after: page.next })}" id="older">Older runs</a>`
        : ''
    }
  </p>`;
  const body = html`${tabs(ctx, ns, all, state, name, page.counts)}${filter}${live(
    'live-runs',
    html`<table id="runs">
        <thead>
          <tr>
            <th>Run</th>
            <th>Workflow</th>
            <th>Version</th>
            <th>State</th>
            <th>Waiting</th>
            <th>Started</th>
            <th>Finished</th>
            <th>Error</th>
          </tr>
        </thead>
        <tbody>
          ${rows}${
            shown.length === 0
              ? html`<tr>
                  <td colspan="8">No runs${state ? ` ${state}` : ''} in this namespace.</td>
                </tr>`
              : ''
          }
        </tbody>
      </table>
      ${pager}`,
  )}`;
  return layout(ctx, `Workflow runs of ${ns}`, 'workflows', body);
}

const iso = (ms: number): string => new Date(ms).toISOString();

function describeEntry(e: Entry): string {
  switch (e.type) {
    case 'start':
      return `start ${e.workflow} v${e.version}${e.parentId ? ` (child of ${e.parentId})` : ''}`;
    case 'done': {
      const head = `#${e.position} ${e.kind} ${e.name}`;
      return e.error
        ? `${head}: failed after ${e.attempts ?? 1} attempt(s): ${e.error.name}: ${e.error.message}`
        : `${head}: done`;
    }
    case 'retry':
      return `#${e.position} ${e.kind} ${e.name}: attempt ${e.attempt} failed (${e.error.name}: ${e.error.message}), next at ${iso(e.retryAt)}`;
    case 'sleep':
      return `#${e.position} sleep until ${iso(e.until)}`;
    case 'wait':
      return `#${e.position} wait for signal ${e.signal}${e.until === null ? '' : ` until ${iso(e.until)}`}`;
    case 'join':
      return `#${e.position} waitAll ${e.runIds.join(', ')}`;
    case 'retried':
      return `retried from #${e.fromPosition}`;
    case 'signal':
      return `signal ${e.name}`;
    case 'cancel':
      return 'cancelled';
    case 'end':
      return e.state === 'completed' ? 'completed' : `failed: ${e.error.name}: ${e.error.message}`;
  }
}

/** One run: its state, input, result or error, the step timeline, the raw journal, and cancel / retry. */
export function runPage(
  ctx: PageCtx,
  ns: string,
  run: WorkflowRun,
  journal: readonly JournalLine[],
  done?: { action: string; ok: boolean },
): string {
  const steps = run.steps.map(
    (s) =>
      html`<li data-position="${s.position}" data-state="${s.state}">
        <b>#${s.position}</b> ${s.kind} <code>${s.name}</code>:
        <span class="${s.state === 'failed' ? 'dead' : s.state === 'retrying' ? 'warn' : ''}">${s.state}</span>
        ${s.failures > 0 ? html` (${s.failures} failed attempt${s.failures === 1 ? '' : 's'})` : ''}
        ${s.until !== null ? html`, until ${when(s.until, ctx.now)}` : ''} · ${when(s.at, ctx.now)}
        ${s.error ? html`<pre class="stack">${s.error.name}: ${s.error.message}${s.error.stack ? `\n${s.error.stack}` : ''}</pre>` : ''}
      </li>`,
  );
  const actions = ctx.readOnly
    ? html``
    : html`<p>
          ${run.state === 'running' ? form(ctx, ns, run.id, 'cancel', 'Cancel run') : ''}
          ${run.state === 'failed' ? form(ctx, ns, run.id, 'retry', 'Retry from the failed step') : ''}
        </p>
        ${run.state === 'running' ? signalForm(ctx, ns, run) : ''}`;
  const flash = done
    ? done.ok
      ? done.action === 'cancel'
        ? 'Cancelled the run (and its children).'
        : done.action === 'signal'
          ? 'Sent the signal.'
          : 'Retrying the run from its first failed step.'
      : done.action === 'signal'
        ? 'No signal sent: the run is no longer running.'
        : `Nothing to ${done.action}: the run is no longer ${done.action === 'cancel' ? 'running' : 'failed'}.`
    : null;
  const body = html`${flash ? html`<p class="flash" role="status" id="workflow-flash">${flash}</p>` : ''}
    <dl class="kv" id="run">
      <dt>Workflow</dt>
      <dd>${run.workflow} v${run.version}</dd>
      <dt>State</dt>
      <dd class="${run.state === 'failed' ? 'dead' : ''}" id="run-state">${run.state}</dd>
      <dt>Started</dt>
      <dd>${when(run.startedAt, ctx.now)}</dd>
      <dt>Finished</dt>
      <dd>${when(run.finishedAt, ctx.now)}</dd>
      ${
        run.parentId
          ? html`<dt>Parent</dt>
              <dd><a href="${link(ctx, 'workflow', { ns, id: run.parentId })}">${run.parentId}</a></dd>`
          : ''
      }
      ${
        run.children.length > 0
          ? html`<dt>Children</dt>
              <dd>${run.children.map((c) => html`<a href="${link(ctx, 'workflow', { ns, id: c })}">${c}</a> `)}</dd>`
          : ''
      }
      <dt>Input</dt>
      <dd><pre>${payloadText(run.input)}</pre></dd>
      ${
        run.state === 'completed'
          ? html`<dt>Result</dt>
              <dd><pre>${payloadText(run.result)}</pre></dd>`
          : ''
      }
      ${
        run.error
          ? html`<dt>Error</dt>
              <dd class="dead">
                ${run.error.name}${run.error.code ? ` (${run.error.code})` : ''}: ${run.error.message}
                ${run.error.stack ? html`<pre class="stack" id="run-stack">${run.error.stack}</pre>` : ''}
              </dd>`
          : ''
      }
    </dl>
    ${actions}
    <h2>Steps</h2>
    ${live(
      'live-steps',
      html`<ol class="timeline" id="steps">
        ${steps}${run.steps.length === 0 ? html`<li>No step journaled yet.</li>` : ''}
      </ol>`,
    )}
    <h2>Journal</h2>
    <table id="journal">
      <thead>
        <tr>
          <th>Offset</th>
          <th>At</th>
          <th>Entry</th>
        </tr>
      </thead>
      <tbody>
        ${journal.map(
          (j) =>
            html`<tr data-entry="${j.entry.type}">
              <td class="n">${j.offset ?? ''}</td>
              <td>${when(j.at, ctx.now)}</td>
              <td>${describeEntry(j.entry)}</td>
            </tr>`,
        )}
      </tbody>
    </table>
    <p><a href="${link(ctx, 'workflows', { ns })}">All runs of ${ns}</a></p>`;
  return layout(ctx, `Workflow run ${run.id}`, 'workflows', body);
}

function form(ctx: PageCtx, ns: string, id: string, action: 'cancel' | 'retry', label: string) {
  return html`<form class="inline" method="post" action="${ctx.base}/workflow-action">
    <input type="hidden" name="csrf" value="${ctx.csrf}" /><input type="hidden" name="action" value="${action}" /><input
      type="hidden"
      name="ns"
      value="${ns}"
    /><input type="hidden" name="id" value="${id}" /><button
      type="submit"
      class="${action === 'cancel' ? 'danger' : ''}"
      data-action="workflow-${action}"
    >
      ${label}
    </button>
  </form>`;
}

/** The send-signal form of a running run (the signal it waits for, if any, filled in). */
function signalForm(ctx: PageCtx, ns: string, run: WorkflowRun) {
  const waiting = [...run.steps].reverse().find((s) => s.state === 'waiting' && s.kind === 'signal');
  return html`<form class="inline" method="post" action="${ctx.base}/workflow-action" id="signal-form">
    <input type="hidden" name="csrf" value="${ctx.csrf}" /><input type="hidden" name="action" value="signal" /><input
      type="hidden"
      name="ns"
      value="${ns}"
    /><input type="hidden" name="id" value="${run.id}" />
    <label>Signal<input type="text" name="signal" value="${waiting?.name ?? ''}" required /></label>
    <label>Data (JSON)<input type="text" name="data" value="null" /></label>
    <button type="submit" data-action="workflow-signal">Send signal</button>
  </form>`;
}
