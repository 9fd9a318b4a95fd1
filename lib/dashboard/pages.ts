import type { StreamInfo, ThroughputPoint } from '../contract/admin.js';
import type { JobInfo, Schedule } from '../contract/types.js';
import { msText, throughputChart } from './chart.js';
import { headersOf, isWorkflowsQueue, type QueueRow } from './data.js';
import { listState } from './flow-view.js';
import { MAX_SELECTED } from './actions.js';
import { html, type SafeHtml } from './html.js';
import { action, ago, layout, link, live, payloadText, when, type PageCtx } from './layout.js';

export { layout, type PageCtx } from './layout.js';

/** A queue row's state with its Pause or Resume (a workflows queue is never paused from here). */
function stateCell(ctx: PageCtx, r: QueueRow): SafeHtml {
  if (r.paused) return html`<span class="warn">paused</span> ${action(ctx, 'resume', 'Resume', { queue: r.name })}`;
  return isWorkflowsQueue(r.name) ? html`active` : html`active ${action(ctx, 'pause', 'Pause', { queue: r.name })}`;
}

/** Queues: counts, oldest ready age, last-hour outcomes, pause controls. */
export function queuesPage(ctx: PageCtx, rows: readonly QueueRow[], throughput: readonly ThroughputPoint[]): string {
  const user = rows.filter((r) => r.outbox === null);
  const body = live(
    'live-queues',
    html`${throughputChart(
        throughput.filter((p) => user.some((r) => r.name === p.queue)),
        ctx.now,
        'Jobs per minute, all queues',
      )}
      <table id="queues">
        <thead>
          <tr>
            <th>Queue</th>
            <th>Pending</th>
            <th>Processing</th>
            <th>Scheduled</th>
            <th>Dead</th>
            <th>Oldest ready</th>
            <th>Done (1 h)</th>
            <th>Failed (1 h)</th>
            <th>Wait p95 (1 h)</th>
            <th>Run p95 (1 h)</th>
            <th>State</th>
          </tr>
        </thead>
        <tbody>
          ${user.map(
            (r) =>
              html`<tr data-queue="${r.name}">
                <td><a href="${link(ctx, 'queue', { name: r.name })}">${r.name}</a></td>
                <td class="n">${r.pending}</td>
                <td class="n">${r.processing}</td>
                <td class="n">${r.scheduled}</td>
                <td class="n">
                  ${r.dead > 0 ? html`<a class="dead" href="${link(ctx, 'dead', { queue: r.name })}">${r.dead}</a>` : '0'}
                </td>
                <td class="n">${r.oldestReadyAgeMs > 0 ? ago(r.oldestReadyAgeMs) : '–'}</td>
                <td class="n">${r.completedLastHour}</td>
                <td class="n">${r.failedLastHour}</td>
                <td class="n wait-p95">${r.waitP95Ms === null ? '–' : msText(r.waitP95Ms)}</td>
                <td class="n run-p95">${r.runP95Ms === null ? '–' : msText(r.runP95Ms)}</td>
                <td>${stateCell(ctx, r)}</td>
              </tr>`,
          )}
          ${
            user.length === 0
              ? html`<tr>
                  <td colspan="11">No queues yet.</td>
                </tr>`
              : ''
          }
        </tbody>
      </table>`,
  );
  return layout(ctx, 'Queues', '', body);
}

/** A payload on one line, cut short (the job page has all of it). */
function payloadLine(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 140 ? `${text.slice(0, 140)}…` : text;
}

/** One compact row (about one text line high): the job page has the rest. */
function jobRow(ctx: PageCtx, job: JobInfo, withActions: boolean, waiting: number | undefined): SafeHtml {
  const headers = headersOf(job);
  const error = job.lastError ? (job.lastError.split('\n', 1)[0] ?? '') : '';
  return html`<tr data-job="${job.id}">
    <td class="pick">
      ${withActions && !ctx.readOnly ? html`<input type="checkbox" name="ids" value="${job.id}" form="selected" aria-label="Select job ${job.id}" />` : ''}
    </td>
    <td class="n"><a class="job" href="${link(ctx, 'job', { queue: job.queue, id: String(job.id) })}">${job.id}</a></td>
    <td class="state">
      ${listState(job.state, waiting)}${job.state === 'pending' && waiting === undefined && job.runAt > ctx.now ? ' (scheduled)' : ''}
    </td>
    <td class="line"><code>${payloadLine(job.payload)}</code></td>
    <td
      class="line"
      title="${
        headers
          ? Object.entries(headers)
              .map(([k, v]) => `${k}: ${v}`)
              .join('\n')
          : ''
      }"
    >
      ${headers ? `${Object.keys(headers).length}` : '–'}
    </td>
    <td class="n">${job.attempts}/${job.maxAttempts}</td>
    <td class="n">${job.priority}</td>
    <td class="line error" title="${error}">${error || '–'}</td>
    <td class="line">${when(job.enqueuedAt, ctx.now)}</td>
    <td class="line">
      ${
        job.diedAt !== null
          ? html`died ${when(job.diedAt, ctx.now)}`
          : job.finishedAt !== undefined
            ? html`${job.state} ${when(job.finishedAt, ctx.now)}`
            : job.claimedUntil !== null
              ? html`lease ${when(job.claimedUntil, ctx.now)}`
              : when(job.runAt, ctx.now)
      }
    </td>
    <td class="line">${withActions ? jobActions(ctx, job) : ''}</td>
  </tr>`;
}

function jobActions(ctx: PageCtx, job: JobInfo): SafeHtml {
  if (job.state === 'dead') {
    return html`${action(ctx, 'redrive', 'Retry', { queue: job.queue, id: job.id })}
    ${action(ctx, 'purge', 'Delete', { queue: job.queue, id: job.id }, true)}`;
  }
  if (job.state === 'completed' || job.state === 'cancelled') return html``;
  return action(ctx, 'cancel', 'Cancel', { queue: job.queue, id: job.id }, true);
}

/** A list of jobs; `waiting` maps the ids of jobs held back by their flow to how many dependencies they wait on. */
/** The sort orders of a job list's page. */
export const SORTS = ['id', 'created', 'attempts', 'runAt'] as const;
export type JobSort = (typeof SORTS)[number];

/** How a list is sorted, and the link that sorts it by another column (or flips this one). */
export interface SortView {
  readonly key: JobSort | null;
  readonly desc: boolean;
  readonly href: (key: JobSort, desc: boolean) => string;
}

const SORT_VALUE: Record<JobSort, (j: JobInfo) => number> = {
  id: (j) => j.id,
  created: (j) => j.enqueuedAt,
  attempts: (j) => j.attempts,
  runAt: (j) => j.runAt,
};

/** The rows of one keyset page in the asked order (ties by id); the pages themselves follow the list's own order. */
export function sortJobs(jobs: readonly JobInfo[], key: JobSort | null, desc: boolean): JobInfo[] {
  if (key === null) return [...jobs];
  const by = SORT_VALUE[key];
  return [...jobs].sort((a, b) => (desc ? -1 : 1) * (by(a) - by(b) || a.id - b.id));
}

function sortHead(label: string, key: JobSort, sort: SortView | undefined): SafeHtml {
  if (!sort) return html`${label}`;
  const on = sort.key === key;
  const desc = on ? !sort.desc : key !== 'attempts' ? false : true;
  return html`<a href="${sort.href(key, desc)}" data-sort="${key}" class="${on ? 'on' : ''}"
    >${label}${on ? (sort.desc ? ' ↓' : ' ↑') : ''}</a
  >`;
}

/** A list of jobs; `waiting` maps the ids of jobs held back by their flow to how many dependencies they wait on. */
export function jobTable(
  ctx: PageCtx,
  jobs: readonly JobInfo[],
  waiting: ReadonlyMap<number, number> = new Map(),
  sort?: SortView,
): SafeHtml {
  return html`<table class="jobs compact">
    <thead>
      <tr>
        <th class="pick"></th>
        <th>${sortHead('Id', 'id', sort)}</th>
        <th>State</th>
        <th>Payload</th>
        <th>Headers</th>
        <th>${sortHead('Attempts', 'attempts', sort)}</th>
        <th>Priority</th>
        <th>Last error</th>
        <th>${sortHead('Created', 'created', sort)}</th>
        <th>${sortHead('Run at / ended', 'runAt', sort)}</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${jobs.map((j) => jobRow(ctx, j, true, waiting.get(j.id)))}${
        jobs.length === 0
          ? html`<tr>
              <td colspan="11">No jobs.</td>
            </tr>`
          : ''
      }
    </tbody>
  </table>`;
}

/** A queue's dead jobs grouped by their error's first line, from the oldest `DEAD_GROUP_SCAN` dead jobs. */
export interface DeadGroups {
  readonly groups: readonly { readonly error: string; readonly ids: readonly number[] }[];
  /** Dead jobs read for the grouping. */
  readonly read: number;
  /** More dead jobs exist beyond those read. */
  readonly more: boolean;
}

/** Groups dead jobs by the first line of their last error, largest group first. */
export function groupDead(jobs: readonly JobInfo[], more: boolean): DeadGroups {
  const by = new Map<string, number[]>();
  for (const j of jobs) {
    const line = (j.lastError ?? '').split('\n', 1)[0]!.slice(0, 300) || '(no error recorded)';
    by.set(line, [...(by.get(line) ?? []), j.id]);
  }
  const groups = [...by.entries()]
    .map(([error, ids]) => ({ error, ids }))
    .sort((a, b) => b.ids.length - a.ids.length || a.error.localeCompare(b.error));
  return { groups, read: jobs.length, more };
}

function groupTable(ctx: PageCtx, queue: string, g: DeadGroups): SafeHtml {
  return html`<h3>By error</h3>
    <table id="dead-groups">
      <thead>
        <tr>
          <th>Error (first line)</th>
          <th>Count</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${g.groups.map(
          (x) =>
            html`<tr data-group-count="${x.ids.length}">
              <td><code class="error">${x.error}</code></td>
              <td class="n">${x.ids.length}</td>
              <td>
                ${action(ctx, 'selected-retry', 'Retry group', { queue, ids: x.ids.slice(0, MAX_SELECTED).join(',') })}
                ${x.ids.length > MAX_SELECTED ? html`<small>(the first ${MAX_SELECTED})</small>` : ''}
              </td>
            </tr>`,
        )}
      </tbody>
    </table>
    <p class="note">
      From the ${g.read} oldest dead
      jobs${g.more ? '; more exist beyond them (retry or delete these, then reload)' : ''}.
    </p>`;
}

/** Dead letters: queues with dead jobs, and one queue's dead jobs with redrive / purge. */
export function deadPage(
  ctx: PageCtx,
  rows: readonly QueueRow[],
  queue: string | null,
  jobs: readonly JobInfo[],
  next: string | null,
  groups: DeadGroups | null = null,
): string {
  const withDead = rows.filter((r) => r.dead > 0);
  const list = html`<table id="dead-queues">
    <thead>
      <tr>
        <th>Queue</th>
        <th>Dead</th>
        <th></th>
      </tr>
    </thead>
    <tbody>
      ${withDead.map(
        (r) =>
          html`<tr>
            <td><a href="${link(ctx, 'dead', { queue: r.name })}">${r.name}</a></td>
            <td class="n">${r.dead}</td>
            <td>
              ${action(ctx, 'redrive-all', 'Retry all', { queue: r.name })}
              ${action(ctx, 'purge-all', 'Delete all', { queue: r.name }, true)}
            </td>
          </tr>`,
      )}
      ${
        withDead.length === 0
          ? html`<tr>
              <td colspan="3">No dead letters.</td>
            </tr>`
          : ''
      }
    </tbody>
  </table>`;
  const detail =
    queue === null
      ? html``
      : html`<h2>${queue}</h2>
          ${groups ? groupTable(ctx, queue, groups) : ''}
          <h3>Dead jobs</h3>
          ${jobTable(ctx, jobs)}${next ? html`<p><a rel="next" href="${link(ctx, 'dead', { queue, cursor: next })}">Next page →</a></p>` : ''}`;
  return layout(ctx, 'Dead letters', 'dead', html`${list}${detail}`);
}

/** Schedules: spec, zone, next fire, leader, trigger now. */
export function schedulesPage(
  ctx: PageCtx,
  leader: { owner: string; expiresAt: number } | null,
  schedules: readonly Schedule[],
): string {
  const body = html`<p id="leader">
      Leader:
      ${
        leader
          ? html`<code>${leader.owner}</code> (lock until ${when(leader.expiresAt, ctx.now)})`
          : html`<span class="warn">none: no runner holds the scheduler lock, nothing fires</span>`
      }
    </p>
    <table id="schedules">
      <thead>
        <tr>
          <th>Name</th>
          <th>Spec</th>
          <th>Zone</th>
          <th>Queue</th>
          <th>Next fire</th>
          <th>Payload</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        ${schedules.map(
          (s) =>
            html`<tr data-schedule="${s.name}">
              <td>
                <a href="${link(ctx, 'schedule', { name: s.name })}">${s.name}</a
                >${s.paused ? html` <span class="warn">paused</span>` : ''}
              </td>
              <td><code>${s.spec}</code></td>
              <td>${s.timeZone}</td>
              <td><a href="${link(ctx, 'queue', { name: s.queue })}">${s.queue}</a></td>
              <td>${when(s.nextFireAt, ctx.now)}</td>
              <td><pre>${payloadText(s.payload)}</pre></td>
              <td>
                ${action(ctx, 'trigger', 'Trigger now', { schedule: s.name })}
                ${s.paused ? action(ctx, 'resume-schedule', 'Resume', { schedule: s.name }) : action(ctx, 'pause-schedule', 'Pause', { schedule: s.name })}
              </td>
            </tr>`,
        )}
        ${
          schedules.length === 0
            ? html`<tr>
                <td colspan="7">No schedules.</td>
              </tr>`
            : ''
        }
      </tbody>
    </table>`;
  return layout(ctx, 'Schedules', 'schedules', body);
}

/** Streams: head offset and each consumer's lag. */
export function streamsPage(ctx: PageCtx, streams: readonly StreamInfo[], next: string | null): string {
  const body = html`<table id="streams">
      <thead>
        <tr>
          <th>Stream</th>
          <th>Head offset</th>
          <th>Consumer</th>
          <th>Saved offset</th>
          <th>Lag</th>
        </tr>
      </thead>
      <tbody>
        ${streams.map((s) =>
          s.consumers.length === 0
            ? html`<tr>
                <td>${s.name}</td>
                <td class="n">${s.headOffset}</td>
                <td colspan="3">no consumers</td>
              </tr>`
            : s.consumers.map(
                (c, i) =>
                  html`<tr>
                    ${
                      i === 0
                        ? html`<td rowspan="${s.consumers.length}">${s.name}</td>
                            <td class="n" rowspan="${s.consumers.length}">${s.headOffset}</td>`
                        : ''
                    }
                    <td>${c.consumer}</td>
                    <td class="n">${c.offset}</td>
                    <td class="n ${c.lag > 0 ? 'warn' : ''}">${c.lag}</td>
                  </tr>`,
              ),
        )}
        ${
          streams.length === 0
            ? html`<tr>
                <td colspan="5">No streams.</td>
              </tr>`
            : ''
        }
      </tbody>
    </table>
    ${next ? html`<p><a rel="next" href="${link(ctx, 'streams', { after: next })}">Next page →</a></p>` : ''}`;
  return layout(ctx, 'Streams', 'streams', body);
}

/** Outboxes: each dispatcher's backlog and its outcomes over the last hour, minute by minute. */
export function outboxesPage(ctx: PageCtx, rows: readonly QueueRow[], throughput: readonly ThroughputPoint[]): string {
  const boxes = rows.filter((r) => r.outbox !== null);
  const body = live(
    'live-outboxes',
    html`${boxes.length === 0 ? html`<p>No outbox has messages or recent deliveries.</p>` : ''}
    ${boxes.map(
      (r) =>
        html`<section data-outbox="${r.outbox}">
          <h2>${r.outbox}</h2>
          <p>
            ${r.pending} pending, ${r.processing} in flight,
            ${r.dead > 0 ? html`<a class="dead" href="${link(ctx, 'dead', { queue: r.name })}">${r.dead} dead</a>` : '0 dead'};
            oldest ready ${r.oldestReadyAgeMs > 0 ? ago(r.oldestReadyAgeMs) : '–'}. Last hour: ${r.completedLastHour}
            delivered, ${r.failedLastHour} retried or dead-lettered.
          </p>
          ${throughputChart(
            throughput.filter((p) => p.queue === r.name),
            ctx.now,
            `Deliveries per minute, ${r.outbox}`,
          )}
          <p>
            <a href="${link(ctx, 'queue', { name: r.name, state: 'pending' })}">Pending messages</a> ·
            <a href="${link(ctx, 'queue', { name: r.name, state: 'dead' })}">Dead-lettered messages</a> ·
            <a href="${link(ctx, 'queue', { name: r.name, state: 'all' })}">Search</a> ·
            <a href="${link(ctx, 'queue', { name: r.name, state: 'finished' })}">History</a> ·
            <a class="receipts" href="${link(ctx, 'receipts', { outbox: r.outbox! })}">Broker receipts</a>
          </p>
        </section>`,
    )}`,
  );
  return layout(ctx, 'Outboxes', 'outboxes', body);
}

/** The confirmation step of a destructive action: the same form again, with `confirm=yes`. */
export function confirmPage(ctx: PageCtx, question: string, fields: Record<string, string>, back: string): string {
  const hidden = Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`);
  const body = html`<div class="confirm">
    <p>${question}</p>
    <form method="post" action="${ctx.base}/action">
      <input type="hidden" name="csrf" value="${ctx.csrf}" />${hidden}<input type="hidden" name="confirm" value="yes" />
      <button type="submit" class="danger" id="confirm">Yes, do it</button> <a href="${back}">Cancel</a>
    </form>
  </div>`;
  return layout(ctx, 'Confirm', '', body);
}

/** A plain error page (bad input, missing feature, refused request). */
export function messagePage(ctx: PageCtx, title: string, message: string): string {
  return layout(
    ctx,
    title,
    '',
    html`<p>${message}</p>
      <p><a href="${ctx.base}">Back to the queues</a></p>`,
  );
}
