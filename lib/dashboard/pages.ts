import type { JobListState, StreamInfo, ThroughputPoint } from '../contract/admin.js';
import type { JobInfo, Schedule } from '../contract/types.js';
import { throughputChart } from './chart.js';
import { headersOf, type QueueRow } from './data.js';
import { html, type SafeHtml } from './html.js';

/** What every page needs: where the dashboard is mounted, the CSRF token for forms, whether actions are allowed. */
export interface PageCtx {
  /** The mount path as the browser sees it, no trailing slash (e.g. `/alkstore`). */
  readonly base: string;
  readonly csrf: string;
  readonly readOnly: boolean;
  /** The database clock. */
  readonly now: number;
  /** A one-line result of the last action (from the redirect). */
  readonly flash: string | null;
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f8fa}
header{background:#24292f;color:#fff;padding:8px 16px;display:flex;gap:16px;align-items:center}
header a{color:#fff;text-decoration:none}header a.on{text-decoration:underline}
header b{margin-right:16px}main{padding:16px}
table{border-collapse:collapse;background:#fff;width:100%;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eaeef2}td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{margin:0;max-width:520px;max-height:160px;overflow:auto;white-space:pre-wrap;word-break:break-all;font-size:12px}
.flash{background:#dafbe1;border:1px solid #4ac26b;padding:6px 10px;margin-bottom:8px}
.warn{color:#bc4c00}.dead{color:#cf222e;font-weight:600}
form.inline{display:inline}button{cursor:pointer}
button.danger{color:#fff;background:#cf222e;border:1px solid #a40e26}
nav.states a{margin-right:8px}nav.states a.on{font-weight:700}
.chart svg{background:#fff;border:1px solid #d0d7de}.chart rect.ok{fill:#2da44e}.chart rect.bad{fill:#cf222e}
.chart text.axis{font-size:10px;fill:#57606a}figcaption{color:#57606a;font-size:12px}
.confirm{background:#fff;border:2px solid #cf222e;padding:16px;max-width:640px}
`;

/** A duration for humans: 950 ms, 12 s, 4 min, 3 h, 2 d. */
export function ago(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

function when(at: number | null, now: number): SafeHtml {
  if (at === null) return html`–`;
  const d = at - now;
  const rel = d >= 0 ? `in ${ago(d)}` : `${ago(-d)} ago`;
  return html`<time datetime="${new Date(at).toISOString()}" title="${new Date(at).toISOString()}">${rel}</time>`;
}

function link(ctx: PageCtx, path: string, params: Record<string, string | undefined> = {}): string {
  const q = Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined);
  const search = q.length ? `?${new URLSearchParams(q).toString()}` : '';
  // The home page is the mount path itself, never `mount/`: Fastify routes `/x/` apart from `/x`.
  return `${path ? `${ctx.base}/${path}` : ctx.base}${search}`;
}

/** A POST form for one action; the server answers with a confirmation page before doing it. */
function action(ctx: PageCtx, name: string, label: string, fields: Record<string, string | number>, danger = false): SafeHtml {
  if (ctx.readOnly) return html``;
  const hidden = Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${String(v)}">`);
  return html`<form class="inline" method="post" action="${ctx.base}/action"><input type="hidden" name="csrf" value="${ctx.csrf}"><input type="hidden" name="action" value="${name}">${hidden}<button type="submit" class="${danger ? 'danger' : ''}" data-action="${name}">${label}</button></form>`;
}

/** The page frame: header navigation, flash line, body. */
export function layout(ctx: PageCtx, title: string, active: string, body: SafeHtml): string {
  const nav = [
    ['', 'Queues'],
    ['dead', 'Dead letters'],
    ['schedules', 'Schedules'],
    ['streams', 'Streams'],
    ['outboxes', 'Outboxes'],
  ].map(([p, label]) => html`<a href="${link(ctx, p!)}" class="${p === active ? 'on' : ''}">${label}</a>`);
  return html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="csrf-token" content="${ctx.readOnly ? '' : ctx.csrf}"><title>${title} · alkstore</title><style>${STYLE}</style></head>
<body><header><b>alkstore</b>${nav}${ctx.readOnly ? html`<span class="warn">read-only</span>` : ''}</header>
<main><h1>${title}</h1>${ctx.flash ? html`<p class="flash" role="status">${ctx.flash}</p>` : ''}${body}</main></body></html>`.value;
}

/** Queues: counts, oldest ready age, last-hour outcomes, pause controls. */
export function queuesPage(ctx: PageCtx, rows: readonly QueueRow[], throughput: readonly ThroughputPoint[]): string {
  const user = rows.filter((r) => r.outbox === null);
  const body = html`${throughputChart(throughput.filter((p) => user.some((r) => r.name === p.queue)), ctx.now, 'Jobs per minute, all queues')}
<table id="queues"><thead><tr><th>Queue</th><th>Pending</th><th>Processing</th><th>Scheduled</th><th>Dead</th><th>Oldest ready</th><th>Done (1 h)</th><th>Failed (1 h)</th><th>State</th></tr></thead><tbody>
${user.map(
  (r) => html`<tr data-queue="${r.name}"><td><a href="${link(ctx, 'queue', { name: r.name })}">${r.name}</a></td>
<td class="n">${r.pending}</td><td class="n">${r.processing}</td><td class="n">${r.scheduled}</td>
<td class="n">${r.dead > 0 ? html`<a class="dead" href="${link(ctx, 'dead', { queue: r.name })}">${r.dead}</a>` : '0'}</td>
<td class="n">${r.oldestReadyAgeMs > 0 ? ago(r.oldestReadyAgeMs) : '–'}</td><td class="n">${r.completedLastHour}</td><td class="n">${r.failedLastHour}</td>
<td>${r.paused ? html`<span class="warn">paused</span> ${action(ctx, 'resume', 'Resume', { queue: r.name })}` : html`active ${action(ctx, 'pause', 'Pause', { queue: r.name })}`}</td></tr>`,
)}
${user.length === 0 ? html`<tr><td colspan="9">No queues yet.</td></tr>` : ''}</tbody></table>`;
  return layout(ctx, 'Queues', '', body);
}

function payloadText(value: unknown): string {
  const text = JSON.stringify(value, null, 2) ?? 'null';
  return text.length > 4000 ? `${text.slice(0, 4000)}\n… (${text.length} characters)` : text;
}

function jobRow(ctx: PageCtx, job: JobInfo, withActions: boolean): SafeHtml {
  const headers = headersOf(job);
  return html`<tr data-job="${job.id}"><td class="n">${job.id}</td><td>${job.state}${job.state === 'pending' && job.runAt > ctx.now ? ' (scheduled)' : ''}</td>
<td><pre class="payload">${payloadText(job.payload)}</pre></td>
<td>${headers ? html`<pre>${Object.entries(headers).map(([k, v]) => `${k}: ${v}\n`)}</pre>` : '–'}</td>
<td class="n">${job.attempts}/${job.maxAttempts}</td><td class="n">${job.priority}</td>
<td>${job.lastError ? html`<pre class="error">${job.lastError}</pre>` : '–'}</td>
<td>enqueued ${when(job.enqueuedAt, ctx.now)}<br>run ${when(job.runAt, ctx.now)}${job.claimedUntil !== null ? html`<br>lease until ${when(job.claimedUntil, ctx.now)}` : ''}${job.diedAt !== null ? html`<br>died ${when(job.diedAt, ctx.now)}` : ''}${job.expiresAt !== null ? html`<br>expires ${when(job.expiresAt, ctx.now)}` : ''}</td>
<td>${withActions ? jobActions(ctx, job) : ''}</td></tr>`;
}

function jobActions(ctx: PageCtx, job: JobInfo): SafeHtml {
  if (job.state === 'dead') {
    return html`${action(ctx, 'redrive', 'Redrive', { queue: job.queue, id: job.id })} ${action(ctx, 'purge', 'Purge', { queue: job.queue, id: job.id }, true)}`;
  }
  return action(ctx, 'cancel', 'Cancel', { queue: job.queue, id: job.id }, true);
}

function jobTable(ctx: PageCtx, jobs: readonly JobInfo[]): SafeHtml {
  return html`<table class="jobs"><thead><tr><th>Id</th><th>State</th><th>Payload</th><th>Headers</th><th>Attempts</th><th>Priority</th><th>Last error</th><th>Times</th><th></th></tr></thead>
<tbody>${jobs.map((j) => jobRow(ctx, j, true))}${jobs.length === 0 ? html`<tr><td colspan="9">No jobs.</td></tr>` : ''}</tbody></table>`;
}

const STATES: readonly JobListState[] = ['pending', 'scheduled', 'processing', 'dead', 'all'];

/** One queue's jobs, one keyset page, filtered by state. */
export function queuePage(ctx: PageCtx, queue: QueueRow | null, name: string, state: JobListState, jobs: readonly JobInfo[], next: string | null, throughput: readonly ThroughputPoint[]): string {
  const states = STATES.map((s) => html`<a href="${link(ctx, 'queue', { name, state: s })}" class="${s === state ? 'on' : ''}">${s}</a>`);
  const summary = queue
    ? html`<p>${queue.pending} pending (${queue.scheduled} scheduled), ${queue.processing} processing, ${queue.dead} dead; oldest ready ${queue.oldestReadyAgeMs > 0 ? ago(queue.oldestReadyAgeMs) : '–'}.</p>`
    : html`<p>No jobs on this queue.</p>`;
  const body = html`${summary}${throughputChart(throughput, ctx.now, `Jobs per minute, ${name}`)}
<nav class="states">State: ${states}</nav>${jobTable(ctx, jobs)}
${next ? html`<p><a rel="next" href="${link(ctx, 'queue', { name, state, cursor: next })}">Next page →</a></p>` : ''}`;
  return layout(ctx, `Queue ${name}`, '', body);
}

/** Dead letters: queues with dead jobs, and one queue's dead jobs with redrive / purge. */
export function deadPage(ctx: PageCtx, rows: readonly QueueRow[], queue: string | null, jobs: readonly JobInfo[], next: string | null): string {
  const withDead = rows.filter((r) => r.dead > 0);
  const list = html`<table id="dead-queues"><thead><tr><th>Queue</th><th>Dead</th><th></th></tr></thead><tbody>
${withDead.map((r) => html`<tr><td><a href="${link(ctx, 'dead', { queue: r.name })}">${r.name}</a></td><td class="n">${r.dead}</td>
<td>${action(ctx, 'redrive-all', 'Redrive all', { queue: r.name })} ${action(ctx, 'purge-all', 'Purge all', { queue: r.name }, true)}</td></tr>`)}
${withDead.length === 0 ? html`<tr><td colspan="3">No dead letters.</td></tr>` : ''}</tbody></table>`;
  const detail =
    queue === null
      ? html``
      : html`<h2>${queue}</h2>${jobTable(ctx, jobs)}${next ? html`<p><a rel="next" href="${link(ctx, 'dead', { queue, cursor: next })}">Next page →</a></p>` : ''}`;
  return layout(ctx, 'Dead letters', 'dead', html`${list}${detail}`);
}

/** Schedules: spec, zone, next fire, leader, trigger now. */
export function schedulesPage(ctx: PageCtx, leader: { owner: string; expiresAt: number } | null, schedules: readonly Schedule[]): string {
  const body = html`<p id="leader">Leader: ${leader ? html`<code>${leader.owner}</code> (lock until ${when(leader.expiresAt, ctx.now)})` : html`<span class="warn">none: no runner holds the scheduler lock, nothing fires</span>`}</p>
<table id="schedules"><thead><tr><th>Name</th><th>Spec</th><th>Zone</th><th>Queue</th><th>Next fire</th><th>Payload</th><th></th></tr></thead><tbody>
${schedules.map((s) => html`<tr data-schedule="${s.name}"><td>${s.name}${s.paused ? html` <span class="warn">paused</span>` : ''}</td><td><code>${s.spec}</code></td><td>${s.timeZone}</td>
<td><a href="${link(ctx, 'queue', { name: s.queue })}">${s.queue}</a></td><td>${when(s.nextFireAt, ctx.now)}</td><td><pre>${payloadText(s.payload)}</pre></td>
<td>${action(ctx, 'trigger', 'Trigger now', { schedule: s.name })}</td></tr>`)}
${schedules.length === 0 ? html`<tr><td colspan="7">No schedules.</td></tr>` : ''}</tbody></table>`;
  return layout(ctx, 'Schedules', 'schedules', body);
}

/** Streams: head offset and each consumer's lag. */
export function streamsPage(ctx: PageCtx, streams: readonly StreamInfo[], next: string | null): string {
  const body = html`<table id="streams"><thead><tr><th>Stream</th><th>Head offset</th><th>Consumer</th><th>Saved offset</th><th>Lag</th></tr></thead><tbody>
${streams.map((s) =>
  s.consumers.length === 0
    ? html`<tr><td>${s.name}</td><td class="n">${s.headOffset}</td><td colspan="3">no consumers</td></tr>`
    : s.consumers.map(
        (c, i) => html`<tr>${i === 0 ? html`<td rowspan="${s.consumers.length}">${s.name}</td><td class="n" rowspan="${s.consumers.length}">${s.headOffset}</td>` : ''}<td>${c.consumer}</td><td class="n">${c.offset}</td><td class="n ${c.lag > 0 ? 'warn' : ''}">${c.lag}</td></tr>`,
      ),
)}
${streams.length === 0 ? html`<tr><td colspan="5">No streams.</td></tr>` : ''}</tbody></table>
${next ? html`<p><a rel="next" href="${link(ctx, 'streams', { after: next })}">Next page →</a></p>` : ''}`;
  return layout(ctx, 'Streams', 'streams', body);
}

/** Outboxes: each dispatcher's backlog and its outcomes over the last hour, minute by minute. */
export function outboxesPage(ctx: PageCtx, rows: readonly QueueRow[], throughput: readonly ThroughputPoint[]): string {
  const boxes = rows.filter((r) => r.outbox !== null);
  const body = html`${boxes.length === 0 ? html`<p>No outbox has messages or recent deliveries.</p>` : ''}
${boxes.map((r) => html`<section data-outbox="${r.outbox}"><h2>${r.outbox}</h2>
<p>${r.pending} pending, ${r.processing} in flight, ${r.dead > 0 ? html`<a class="dead" href="${link(ctx, 'dead', { queue: r.name })}">${r.dead} dead</a>` : '0 dead'}; oldest ready ${r.oldestReadyAgeMs > 0 ? ago(r.oldestReadyAgeMs) : '–'}.
Last hour: ${r.completedLastHour} delivered, ${r.failedLastHour} retried or dead-lettered.</p>
${throughputChart(throughput.filter((p) => p.queue === r.name), ctx.now, `Deliveries per minute, ${r.outbox}`)}
<p><a href="${link(ctx, 'queue', { name: r.name, state: 'pending' })}">Messages</a></p></section>`)}`;
  return layout(ctx, 'Outboxes', 'outboxes', body);
}

/** The confirmation step of a destructive action: the same form again, with `confirm=yes`. */
export function confirmPage(ctx: PageCtx, question: string, fields: Record<string, string>, back: string): string {
  const hidden = Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`);
  const body = html`<div class="confirm"><p>${question}</p>
<form method="post" action="${ctx.base}/action"><input type="hidden" name="csrf" value="${ctx.csrf}">${hidden}<input type="hidden" name="confirm" value="yes">
<button type="submit" class="danger" id="confirm">Yes, do it</button> <a href="${back}">Cancel</a></form></div>`;
  return layout(ctx, 'Confirm', '', body);
}

/** A plain error page (bad input, missing feature, refused request). */
export function messagePage(ctx: PageCtx, title: string, message: string): string {
  return layout(ctx, title, '', html`<p>${message}</p><p><a href="${ctx.base}">Back to the queues</a></p>`);
}
