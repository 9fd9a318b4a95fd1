import type { FlowView, JobDetail, JobSearchState, ThroughputPoint } from '../contract/admin.js';
import { flowSection } from './flow-view.js';
import type { JobInfo, RateLimit } from '../contract/types.js';
import type { AuditRow } from './audit.js';
import type { BulkOp } from './bulk.js';
import { latencyChart, throughputChart } from './chart.js';
import { headersOf, isWorkflowsQueue, type QueueRow } from './data.js';
import { html, type SafeHtml } from './html.js';
import { action, ago, layout, link, live, payloadText, when, whenFull, type PageCtx } from './layout.js';
import { jobTable, SORTS, sortJobs, type JobSort, type SortView } from './pages.js';

/** Page sizes of a queue's list. */
export const PAGE_SIZES = [25, 50, 100, 200] as const;
export const DEFAULT_PAGE_SIZE = 50;

/** How the queue page shows its list: page size and the order of the page's rows. */
export interface ListView {
  readonly size: number;
  readonly sort: JobSort | null;
  readonly desc: boolean;
}

/** Reads `size`, `sort` and `dir` from the query; unknown values fall back to the defaults. */
export function readListView(size: string | undefined, sort: string | undefined, dir: string | undefined): ListView {
  const n = Number(size);
  return {
    size: (PAGE_SIZES as readonly number[]).includes(n) ? n : DEFAULT_PAGE_SIZE,
    sort: (SORTS as readonly string[]).includes(sort ?? '') ? (sort as JobSort) : null,
    desc: dir === 'desc',
  };
}

/**
 * The form the row checkboxes belong to (`form="selected"`): retry, cancel or delete the selected jobs,
 * confirmed with their count and audited like every action.
 */
function selectedForm(ctx: PageCtx, queue: string): SafeHtml {
  if (ctx.readOnly) return html``;
  return html`<form id="selected" class="bulk" method="post" action="${ctx.base}/action">
    <input type="hidden" name="csrf" value="${ctx.csrf}" /><input type="hidden" name="queue" value="${queue}" />
    Selected jobs:
    <button type="submit" name="action" value="selected-retry" data-action="selected-retry">Retry</button>
    <button type="submit" name="action" value="selected-cancel" class="danger" data-action="selected-cancel">
      Cancel
    </button>
    <button type="submit" name="action" value="selected-delete" class="danger" data-action="selected-delete">
      Delete
    </button>
  </form>`;
}
import { editForm } from './job-forms.js';
import { describeFilter, type JobFilter } from './search-query.js';
import { lookedAt, type SearchResult } from './search-more.js';

const STATES: readonly JobSearchState[] = ['pending', 'scheduled', 'processing', 'dead', 'finished', 'all'];
/** How the state links and the select name a state (`finished` is the job history). */
const STATE_LABEL: Record<JobSearchState, string> = {
  pending: 'pending',
  scheduled: 'scheduled',
  processing: 'processing',
  dead: 'dead',
  finished: 'history (finished)',
  all: 'all',
};

function field(name: string, label: string, value: string | undefined, placeholder: string, type = 'text'): SafeHtml {
  return html`<label
    >${label}<input type="${type}" name="${name}" value="${value ?? ''}" placeholder="${placeholder}"
  /></label>`;
}

/** The filter form: a GET, so the query is in the URL and a link can be shared. */
function searchForm(ctx: PageCtx, f: JobFilter): SafeHtml {
  const p = f.params;
  return html`<form class="search" method="get" action="${link(ctx, 'queue')}" id="search">
    <input type="hidden" name="name" value="${f.queue}" />
    <label
      >State<select name="state">
        ${STATES.map((s) => html`<option value="${s}" ${s === f.state ? html`selected` : ''}>${STATE_LABEL[s]}</option>`)}
      </select></label
    >
    ${field('id', 'Job id', p.id, '42')}${field('unique', 'Unique key', p.unique, 'order-42')}${field('ordering', 'Ordering key', p.ordering, 'customer-7')}
    ${field('error', 'Error contains', p.error, 'timeout')}${field('payload', 'Payload field', p.payload, 'orderId = 42')}
    ${field('header', 'Header', p.header, 'alkstore-schedule = nightly')}
    ${field('from', 'Enqueued from (UTC)', p.from, '', 'datetime-local')}${field('to', 'Enqueued before (UTC)', p.to, '', 'datetime-local')}
    <button type="submit">Search</button> <a href="${link(ctx, 'queue', { name: f.queue, state: f.state })}">Clear</a>
  </form>`;
}

/** Bulk actions on every job the filter matches (not only this page); each asks for confirmation with the count. */
function bulkForms(ctx: PageCtx, f: JobFilter): SafeHtml {
  if (ctx.readOnly) return html``;
  const fields = { ...f.params, queue: f.queue };
  return html`<p class="bulk">
    All jobs matching this filter: ${action(ctx, 'bulk-retry', 'Retry all matching dead jobs', fields)}
    ${action(ctx, 'bulk-cancel', 'Cancel all matching live jobs', fields, true)}
    ${action(ctx, 'bulk-delete', 'Delete all matching jobs', fields, true)}
  </p>`;
}

function rateView(r: RateLimit | null): string {
  return r === null ? 'none' : `${r.max} per ${r.perMs} ms`;
}

function limitInput(name: string, label: string, value: number | null | undefined, hint: string): SafeHtml {
  return html`<label
    >${label}
    <input
      name="${name}"
      inputmode="numeric"
      pattern="[0-9]*"
      size="8"
      value="${value === null || value === undefined ? '' : String(value)}"
      placeholder="${hint}"
  /></label> `;
}

/**
 * A queue's controls: pause/resume on every replica, and the queue's limits (docs/limits.md) with a
 * form that sets or clears them (an empty field clears its limit), confirmed and audited like pause.
 * A viewer sees the values only.
 */
function queueControls(ctx: PageCtx, queue: QueueRow | null, name: string): SafeHtml {
  if (queue === null) return html``;
  const l = queue.limits;
  const values = html`<dl class="kv" id="queue-limits">
    <dt>Concurrency per key</dt>
    <dd id="limit-concurrency">${String(l.concurrencyLimit)}</dd>
    <dt>Global concurrency</dt>
    <dd id="limit-global">${l.globalConcurrency === null ? 'none' : String(l.globalConcurrency)}</dd>
    <dt>Rate limit per key</dt>
    <dd id="limit-key-rate">${rateView(l.keyRateLimit)}</dd>
    <dt>Queue rate limit</dt>
    <dd id="limit-rate">${rateView(l.rateLimit)}</dd>
  </dl>`;
  if (ctx.readOnly) return html`<section id="queue-controls" class="controls">Limits: ${values}</section>`;
  const pause = queue.paused
    ? action(ctx, 'resume', 'Resume the queue', { queue: name })
    : isWorkflowsQueue(name)
      ? html`(carries workflow runs: not paused from here)`
      : action(ctx, 'pause', 'Pause the queue', { queue: name });
  const form = html`<form class="inline" id="limits-form" method="post" action="${ctx.base}/action">
    <input type="hidden" name="csrf" value="${ctx.csrf}" /><input type="hidden" name="action" value="limits" /><input
      type="hidden"
      name="queue"
      value="${name}"
    />
    ${limitInput('concurrencyLimit', 'Concurrency per key', l.concurrencyLimit === 1 ? null : l.concurrencyLimit, '1')}
    ${limitInput('globalConcurrency', 'Global concurrency', l.globalConcurrency, 'none')}
    ${limitInput('keyRateMax', 'Per-key rate: max', l.keyRateLimit?.max, 'none')}${limitInput('keyRatePerMs', 'per ms', l.keyRateLimit?.perMs, 'none')}
    ${limitInput('rateMax', 'Queue rate: max', l.rateLimit?.max, 'none')}${limitInput('ratePerMs', 'per ms', l.rateLimit?.perMs, 'none')}
    <button type="submit" data-action="limits">Save limits</button> <small>An empty field clears its limit.</small>
  </form>`;
  return html`<section id="queue-controls" class="controls">Controls: ${pause} Limits: ${values}${form}</section>`;
}

/** One queue's jobs: the filter form, one keyset page (claim order without a filter, newest first with one), bulk actions. */
export function queuePage(
  ctx: PageCtx,
  queue: QueueRow | null,
  f: JobFilter,
  jobs: readonly JobInfo[],
  next: string | null,
  scanned: SearchResult | null,
  throughput: readonly ThroughputPoint[],
  waiting: ReadonlyMap<number, number>,
  view: ListView,
): string {
  const name = f.queue;
  const states = STATES.map(
    (s) =>
      html`<a
        href="${link(ctx, 'queue', { ...f.params, state: s })}"
        class="${s === f.state ? 'on' : ''}"
        data-state="${s}"
        >${STATE_LABEL[s]}</a
      >`,
  );
  const summary = queue
    ? html`<p id="summary">
        ${queue.pending} pending (${queue.scheduled} scheduled), ${queue.processing} processing, ${queue.dead} dead;
        oldest ready
        ${queue.oldestReadyAgeMs > 0 ? ago(queue.oldestReadyAgeMs) : '–'}.${queue.paused ? html` <span class="warn">Paused.</span>` : ''}
      </p>`
    : html`<p id="summary">No jobs on this queue.</p>`;
  const searched = f.filtered
    ? html`<p class="note" id="search-note">
        Matching ${describeFilter(f)}, newest first. ${scanned !== null ? lookedAt(scanned) : ''}
        ${next ? html` <a rel="next" href="${link(ctx, 'queue', { ...f.params, cursor: next })}">Search further →</a>` : ''}
      </p>`
    : html``;
  const charts = html`<div class="charts">
    ${throughputChart(throughput, ctx.now, `Jobs per minute, ${name}`)}${throughputChart(throughput, ctx.now, `Jobs per hour, ${name}`, 'day')}
    ${latencyChart(throughput, 'wait', ctx.now, `Wait time per minute, ${name}`)}
    ${latencyChart(throughput, 'wait', ctx.now, `Wait time per hour, ${name}`, 'day')}
    ${latencyChart(throughput, 'run', ctx.now, `Run time per minute, ${name}`)}${latencyChart(throughput, 'run', ctx.now, `Run time per hour, ${name}`, 'day')}
  </div>`;
  const here = { ...f.params, ...(view.size !== DEFAULT_PAGE_SIZE ? { size: String(view.size) } : {}) };
  const sort: SortView = {
    key: view.sort,
    desc: view.desc,
    href: (key, desc) => link(ctx, 'queue', { ...here, sort: key, dir: desc ? 'desc' : 'asc' }),
  };
  const sizes = PAGE_SIZES.map(
    (n) =>
      html`<a
        href="${link(ctx, 'queue', { ...f.params, size: String(n), ...(view.sort ? { sort: view.sort, dir: view.desc ? 'desc' : 'asc' } : {}) })}"
        class="${n === view.size ? 'on' : ''}"
        data-size="${n}"
        >${n}</a
      > `,
  );
  const body = html`${live('live-summary', summary)}
    <details class="strip" id="queue-insights">
      <summary>Charts and limits</summary>
      ${live('live-charts', charts)}${queueControls(ctx, queue, name)}
    </details>
    <nav class="states">
      State:
      ${states}${ctx.readOnly ? '' : html` · <a id="new-job-link" href="${link(ctx, 'new', { queue: name })}">Enqueue a job</a>`}
      · Page size: ${sizes}
    </nav>
    <details class="strip" id="search-strip" ${f.filtered ? html`open` : ''}>
      <summary>Search and bulk actions</summary>
      ${searchForm(ctx, f)}${bulkForms(ctx, f)}
    </details>
    ${searched}${selectedForm(ctx, name)}${live('live-jobs', jobTable(ctx, sortJobs(jobs, view.sort, view.desc), waiting, sort))}
    ${next && !f.filtered ? html`<p><a rel="next" href="${link(ctx, 'queue', { ...here, cursor: next })}">Next page →</a></p>` : ''}`;
  return layout(ctx, `Queue ${name}`, '', body);
}

function traceId(headers: Readonly<Record<string, string>>): string | null {
  const m = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(headers.traceparent ?? '');
  return m ? m[1]! : null;
}

function stateText(job: JobDetail, now: number, flow: FlowView): string {
  if (job.state === 'pending' && flow.pending > 0)
    return `waiting on ${flow.pending} child${flow.pending === 1 ? '' : 'ren'} (its flow's dependencies)`;
  if (job.state === 'pending' && job.blocked) return 'pending (waiting behind an older job of its ordering key)';
  if (job.state === 'pending' && job.runAt > now) return 'pending (scheduled)';
  return job.state;
}

/** The first line of an error text (its message), for an attempt's collapsed summary. */
function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** The state timeline from what the row keeps, its failed attempts, plus the audit log's actions on the job. */
function timeline(ctx: PageCtx, job: JobDetail, audit: readonly AuditRow[]): SafeHtml {
  const items: { at: number | null; text: SafeHtml }[] = [{ at: job.enqueuedAt, text: html`Enqueued` }];
  if (job.runAt > job.enqueuedAt + 1000 && (job.attempts === 0 || job.state === 'pending'))
    items.push({ at: job.runAt, text: html`${job.runAt > ctx.now ? 'Runs' : 'Became ready'}` });
  // Each recorded failed attempt (schema step 14), then the current one from the row.
  for (const a of job.failedAttempts) {
    items.push({
      at: a.claimedAt ?? a.endedAt,
      text: html`Attempt ${a.attempt} claimed${a.workerId ? html` by worker <code>${a.workerId}</code>` : ''}`,
    });
    items.push({
      at: a.endedAt,
      text: html`<span class="attempt ${a.outcome}"
          >Attempt ${a.attempt}
          ${a.outcome === 'dead' ? 'failed, dead' : a.outcome === 'lapsed' ? 'lease lapsed' : 'failed, retried'}</span
        >${
          a.error !== null
            ? html`<details class="attempt-error">
                <summary>${firstLine(a.error)}</summary>
                <pre class="error full">${a.error}</pre>
              </details>`
            : ''
        }`,
    });
  }
  const recorded = job.failedAttempts.some((a) => a.attempt === job.attempts);
  if (job.attempts > 0 && !recorded) {
    items.push({
      at: null,
      text: html`Attempt ${job.attempts} of
      ${job.maxAttempts}${job.workerId ? html` by worker <code>${job.workerId}</code>` : ''}`,
    });
  }
  if (job.state === 'processing') items.push({ at: job.claimedUntil, text: html`Processing, lease until` });
  if (job.lastError !== null && !recorded)
    items.push({
      at: null,
      text: html`${job.state === 'dead' ? 'Failed' : 'Last attempt failed'}:
        <pre class="error full">${job.lastError}</pre>`,
    });
  if (job.state === 'pending' && job.attempts > 0)
    items.push({ at: job.runAt, text: html`Retry ${job.runAt > ctx.now ? 'due' : 'ready since'}` });
  if (job.diedAt !== null) items.push({ at: job.diedAt, text: html`<span class="dead">Dead</span>` });
  if (job.state === 'completed')
    items.push({
      at: job.finishedAt ?? null,
      text: html`<span class="ok">Completed</span>${job.result !== undefined ? ' with a result' : ''}`,
    });
  if (job.state === 'cancelled')
    items.push({ at: job.finishedAt ?? null, text: html`<span class="warn">Cancelled</span>` });
  for (const r of audit)
    items.push({ at: r.entry.at, text: html`Operator <b>${r.entry.actor}</b> (${r.entry.role}): ${r.entry.action}` });
  // In the row's own order; an undated step sorts with the step before it, so operator actions fall in by time.
  let last = Number.MIN_SAFE_INTEGER;
  const keyed = items.map((i) => ({ ...i, key: (last = i.at ?? last) }));
  keyed.sort((a, b) => a.key - b.key);
  items.splice(0, items.length, ...keyed);
  return html`<ol class="timeline" id="timeline">
    ${items.map((i) => html`<li>${i.at !== null ? html`${whenFull(i.at, ctx.now)}: ` : ''}${i.text}</li>`)}
  </ol>`;
}

function jobActions(ctx: PageCtx, job: JobDetail): SafeHtml {
  const ids = { queue: job.queue, id: job.id, back: 'job' };
  if (job.state === 'dead')
    return html`${action(ctx, 'redrive', 'Retry', ids)} ${action(ctx, 'purge', 'Delete', ids, true)}`;
  // An outcome record is history: nothing to act on (retention prunes it).
  if (job.state === 'completed' || job.state === 'cancelled') return html``;
  return action(
    ctx,
    'cancel',
    job.state === 'processing' ? 'Cancel (the running handler is signalled to stop; never retried)' : 'Cancel',
    ids,
    true,
  );
}

/** A progress value: a bar for a number in 0..100 or `{ percent }`, else the JSON. */
function progressView(value: unknown): SafeHtml {
  const pct =
    typeof value === 'number'
      ? value
      : typeof value === 'object' && value !== null && typeof (value as { percent?: unknown }).percent === 'number'
        ? (value as { percent: number }).percent
        : null;
  const bar =
    pct !== null && pct >= 0 && pct <= 100
      ? html`<progress max="100" value="${String(pct)}">${String(pct)} %</progress> `
      : html``;
  return html`${bar}<code>${JSON.stringify(value) ?? 'null'}</code>`;
}

/** One job: fields, payload, headers, timeline, actions valid in its state. */
export function jobPage(
  ctx: PageCtx,
  job: JobDetail,
  audit: readonly AuditRow[],
  full: boolean,
  flow: FlowView,
): string {
  const headers = headersOf(job);
  const trace = traceId(job.headers);
  const payload = payloadText(job.payload, full ? Number.MAX_SAFE_INTEGER : 4000);
  const cut = !full && payload.length < (JSON.stringify(job.payload, null, 2) ?? '').length;
  const body = html`${live(
      'live-job',
      html`<dl class="kv" id="job">
          <dt>Queue</dt>
          <dd><a href="${link(ctx, 'queue', { name: job.queue })}">${job.queue}</a></dd>
          <dt>State</dt>
          <dd class="${job.state === 'dead' ? 'dead' : ''}" id="job-state">${stateText(job, ctx.now, flow)}</dd>
          <dt>Attempts</dt>
          <dd>${job.attempts} of ${job.maxAttempts}</dd>
          <dt>Priority</dt>
          <dd>${job.priority}</dd>
          <dt>Unique key</dt>
          <dd>${job.uniqueKey ?? '–'}</dd>
          <dt>Ordering key</dt>
          <dd>
            ${
              job.orderingKey
                ? html`<a href="${link(ctx, 'queue', { name: job.queue, state: 'all', ordering: job.orderingKey })}"
                    >${job.orderingKey}</a
                  >`
                : '–'
            }
          </dd>
          <dt>Concurrency key</dt>
          <dd id="job-concurrency-key">${job.concurrencyKey ?? '–'}</dd>
          <dt>Rate limit key</dt>
          <dd id="job-rate-key">${job.rateLimitKey ?? '–'}</dd>
          <dt>Trace id</dt>
          <dd>${trace ?? '–'}</dd>
          <dt>Worker</dt>
          <dd>${job.workerId ?? '–'}</dd>
          <dt>Run at</dt>
          <dd>${whenFull(job.runAt, ctx.now)}</dd>
          <dt>Expires</dt>
          <dd>${whenFull(job.expiresAt, ctx.now)}</dd>
          <dt>Lease</dt>
          <dd>
            ${job.visibilityTimeoutMs}
            ms${job.claimedUntil !== null ? html`, until ${when(job.claimedUntil, ctx.now)}` : ''}
          </dd>
          <dt>Backoff base</dt>
          <dd>${job.backoffBaseMs} ms</dd>
          ${
            job.finishedAt !== undefined
              ? html`<dt>Finished</dt>
                  <dd id="job-finished">${whenFull(job.finishedAt, ctx.now)}</dd>`
              : ''
          }
          <dt>Progress</dt>
          <dd id="job-progress">${job.progress === undefined ? '–' : progressView(job.progress)}</dd>
          ${
            job.state === 'completed'
              ? html`<dt>Result</dt>
                  <dd>
                    ${
                      job.result === undefined
                        ? html`<span id="job-result">none (the handler returned nothing)</span>`
                        : html`<pre class="full" id="job-result">${payloadText(job.result)}</pre>`
                    }
                  </dd>`
              : ''
          }
        </dl>
        ${flowSection(ctx, job, flow)}
        <h2>Timeline</h2>
        ${timeline(ctx, job, audit)}`,
    )}
    <p>${jobActions(ctx, job)}</p>
    ${editForm(ctx, job)}
    <h2>Payload</h2>
    <pre class="payload full" id="payload">${payload}</pre>
    ${cut ? html`<p><a id="payload-all" href="${link(ctx, 'job', { queue: job.queue, id: String(job.id), full: '1' })}">Show all of the payload</a></p>` : ''}
    <p>
      <a id="payload-download" href="${link(ctx, 'payload', { queue: job.queue, id: String(job.id) })}" download
        >Download the payload (JSON)</a
      >
    </p>
    <h2>Headers</h2>
    ${
      headers
        ? html`<table id="headers">
            <tbody>
              ${Object.entries(headers).map(
                ([k, v]) =>
                  html`<tr>
                    <th>${k}</th>
                    <td><code>${v}</code></td>
                  </tr>`,
              )}
            </tbody>
          </table>`
        : html`<p>None.</p>`
    }`;
  return layout(ctx, `Job ${job.id}`, '', body);
}

/** A bulk action's progress; the live region refreshes it until it ends. */
export function bulkPage(ctx: PageCtx, op: BulkOp): string {
  const verb =
    op.kind === 'retry'
      ? 'Retry matching dead jobs'
      : op.kind === 'cancel'
        ? 'Cancel matching live jobs'
        : 'Delete matching jobs';
  const body = live(
    'live-bulk',
    html`<div id="bulk" data-state="${op.state}">
      <p>
        ${verb} of queue <a href="${link(ctx, 'queue', { ...op.filter.params })}">${op.filter.queue}</a> matching
        ${describeFilter(op.filter)}.
      </p>
      <p>
        <progress max="${Math.max(op.matched, op.seen, 1)}" value="${op.seen}"></progress> ${op.seen} of ${op.matched}
        matched jobs looked at,
        <b id="bulk-changed">${op.changed}</b>
        ${op.kind === 'retry' ? 'retried' : op.kind === 'cancel' ? 'cancelled' : 'deleted'} in ${op.batches}
        batch${op.batches === 1 ? '' : 'es'}.${
          op.conflicts > 0
            ? html` <span class="warn" id="bulk-conflicts"
                >${op.conflicts} stayed dead: a live job holds their unique key.</span
              >`
            : ''
        }
      </p>
      <p id="bulk-state">
        ${
          op.state === 'running'
            ? 'Running…'
            : op.state === 'done'
              ? html`Done ${when(op.finishedAt, Date.now())}.`
              : html`<span class="dead">Failed: ${op.error}</span>`
        }
      </p>
    </div>`,
  );
  return layout(ctx, 'Bulk action', '', body);
}

/** The audit log, newest first, keyset-paged by offset. */
export function auditPage(ctx: PageCtx, rows: readonly AuditRow[], next: number | null): string {
  const body = html`<table id="audit">
      <thead>
        <tr>
          <th>#</th>
          <th>When</th>
          <th>Who</th>
          <th>Action</th>
          <th>Queue / schedule</th>
          <th>Jobs</th>
          <th>Filter</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr data-offset="${r.offset}">
              <td class="n">${r.offset}</td>
              <td>${whenFull(r.entry.at, ctx.now)}</td>
              <td>${r.entry.actor} <span class="note">(${r.entry.role})</span></td>
              <td>${r.entry.action}</td>
              <td>
                ${r.entry.queue ? html`<a href="${link(ctx, 'queue', { name: r.entry.queue, state: 'all' })}">${r.entry.queue}</a>` : (r.entry.schedule ?? '–')}
              </td>
              <td class="n">
                ${r.entry.count}
                ${
                  r.entry.jobs.length > 0 && r.entry.queue
                    ? html`:
                      ${r.entry.jobs
                        .slice(0, 10)
                        .map(
                          (id) =>
                            html`<a href="${link(ctx, 'job', { queue: r.entry.queue!, id: String(id) })}">${id}</a> `,
                        )}${r.entry.jobs.length > 10 ? '…' : ''}`
                    : ''
                }
              </td>
              <td>${r.entry.filter ?? '–'}</td>
            </tr>`,
        )}
        ${
          rows.length === 0
            ? html`<tr>
                <td colspan="7">No actions yet.</td>
              </tr>`
            : ''
        }
      </tbody>
    </table>
    ${next !== null ? html`<p><a rel="next" href="${link(ctx, 'audit', { before: String(next) })}">Older →</a></p>` : ''}`;
  return layout(ctx, 'Audit log', 'audit', body);
}
