import {
  NODE_GONE_INTERVALS,
  NODE_HEARTBEAT_MS,
  NODE_REMOVED_AFTER_MS,
  type NodeInfo,
  type NodeQueue,
  type ReceiptPage,
  type WorkerInfo,
} from '../contract/admin.js';
import { SCHEDULE_BOUNDARY_HEADER, SCHEDULE_NAME_HEADER } from '../contract/schedule-headers.js';
import type { JobInfo, Schedule, StoredReceipt } from '../contract/types.js';
import { html, type SafeHtml } from './html.js';
import { lookedAt, type SearchResult } from './search-more.js';
import { action, ago, layout, link, live, payloadText, when, type PageCtx } from './layout.js';
import { jobTable } from './pages.js';

/** `host:pid:tag` (the Nest worker hosts) or `host-pid-tag` (the outbox dispatcher): host and pid when the id has them. */
export function hostPidOf(workerId: string): { host: string; pid: string } | null {
  const m = /^(.+?)[:-](\d{1,10})[:-][0-9a-f]{2,16}$/.exec(workerId);
  return m ? { host: m[1]!, pid: m[2]! } : null;
}

function nodeState(n: NodeInfo, now: number): SafeHtml {
  return n.gone
    ? html`<span class="dead">gone: no heartbeat for ${ago(now - n.heartbeatAt)}</span>`
    : html`<span class="ok">alive</span>`;
}

/** The fleet: every node with a heartbeat row (one table row per node and queue), idle nodes and queues too. */
function fleetTable(ctx: PageCtx, nodes: readonly NodeInfo[]): SafeHtml {
  const rows = nodes.flatMap((n) => {
    const held = link(ctx, 'workers', { node: n.nodeId });
    const cells = (q: NodeQueue | null) =>
      html`<tr data-node="${n.nodeId}" data-queue="${q?.queue ?? ''}" data-state="${n.gone ? 'gone' : 'alive'}">
        <td>
          <a class="node" href="${held}"><code>${n.nodeId}</code></a>
        </td>
        <td>${n.host}</td>
        <td class="n">${n.pid}</td>
        <td>${n.version}</td>
        <td>
          ${q ? html`<a href="${link(ctx, 'queue', { name: q.queue, state: 'processing' })}">${q.queue}</a>` : '–'}
        </td>
        <td class="n">${q ? q.concurrency : '–'}</td>
        <td class="n running">${q ? (q.running > 0 ? html`<a href="${held}">${q.running}</a>` : '0') : '–'}</td>
        <td>${when(n.heartbeatAt, ctx.now)}</td>
        <td>${when(n.startedAt, ctx.now)}</td>
        <td class="node-state">${nodeState(n, ctx.now)}</td>
      </tr>`;
    return n.queues.length === 0 ? [cells(null)] : n.queues.map((q) => cells(q));
  });
  return html`<table id="fleet">
    <thead>
      <tr>
        <th>Node</th>
        <th>Host</th>
        <th>Pid</th>
        <th>Version</th>
        <th>Queue</th>
        <th>Concurrency</th>
        <th>Running</th>
        <th>Last heartbeat</th>
        <th>Started</th>
        <th>State</th>
      </tr>
    </thead>
    <tbody>
      ${rows}${
        nodes.length === 0
          ? html`<tr>
              <td colspan="10">No node has written a heartbeat (workers started by AlkstoreModule do, every 10 s).</td>
            </tr>`
          : ''
      }
    </tbody>
  </table>`;
}

/** Claims: who holds jobs now, per queue (a worker without a heartbeat row shows here only). */
function claimsTable(ctx: PageCtx, workers: readonly WorkerInfo[]): SafeHtml {
  const rows = workers.map((w) => {
    const hp = hostPidOf(w.workerId);
    return html`<tr data-worker="${w.workerId}" data-queue="${w.queue}">
      <td>
        ${w.workerId ? html`<a href="${link(ctx, 'workers', { node: w.workerId })}"><code>${w.workerId}</code></a>` : html`<code>(no id)</code>`}
      </td>
      <td>${hp?.host ?? '–'}</td>
      <td class="n">${hp?.pid ?? '–'}</td>
      <td><a href="${link(ctx, 'queue', { name: w.queue, state: 'processing' })}">${w.queue}</a></td>
      <td class="n">${w.jobs}</td>
      <td>${when(w.earliestDeadline, ctx.now)} – ${when(w.latestDeadline, ctx.now)}</td>
      <td class="worker-state">
        ${w.lapsed ? html`<span class="dead">lapsed: every lease is past its deadline (stopped or stalled; the jobs go to the next claim)</span>` : 'running'}
      </td>
    </tr>`;
  });
  return html`<table id="workers">
    <thead>
      <tr>
        <th>Worker id</th>
        <th>Host</th>
        <th>Pid</th>
        <th>Queue</th>
        <th>Jobs held</th>
        <th>Lease deadlines</th>
        <th>State</th>
      </tr>
    </thead>
    <tbody>
      ${rows}${
        workers.length === 0
          ? html`<tr>
              <td colspan="7">No worker holds a job right now.</td>
            </tr>`
          : ''
      }
    </tbody>
  </table>`;
}

/**
 * Workers: the fleet from the nodes' heartbeats (idle nodes too), the claims of the moment, and, with
 * `node`, the jobs that node holds now.
 */
export function workersPage(
  ctx: PageCtx,
  nodes: readonly NodeInfo[],
  workers: readonly WorkerInfo[],
  node: { readonly id: string; readonly jobs: readonly JobInfo[] } | null,
): string {
  const heldBy = node
    ? html`<section id="held">
        <h2>Jobs held by <code>${node.id}</code> now</h2>
        ${jobTable(ctx, node.jobs)}
        <p><a href="${link(ctx, 'workers')}">All workers</a></p>
      </section>`
    : html``;
  const body = live(
    'live-workers',
    html`${heldBy}
      <h2>Fleet</h2>
      ${fleetTable(ctx, nodes)}
      <p class="note">
        Each node writes a heartbeat every ${ago(NODE_HEARTBEAT_MS)} (the module's <code>heartbeatIntervalMs</code>)
        with its queues, their concurrency and the jobs it holds. A node silent for ${NODE_GONE_INTERVALS} of its
        intervals shows as gone; the retention runner deletes its row ${ago(NODE_REMOVED_AFTER_MS)} after its last
        heartbeat, and a graceful stop deletes it at once.
      </p>
      <h2>Claims</h2>
      ${claimsTable(ctx, workers)}
      <p class="note">
        From the jobs being processed: each row is a worker id holding jobs of a queue, with the deadlines of its leases
        (they move forward while it heartbeats).
      </p>`,
  );
  return layout(ctx, 'Workers', 'workers', body);
}

function receiptFields(r: StoredReceipt): SafeHtml {
  return html`${Object.entries(r.receipt)
    .filter(([k]) => k !== 'broker')
    .map(([k, v]) => html`<span class="kv"><b>${k}</b>=<code>${String(v)}</code></span> `)}`;
}

/** One outbox's delivery receipts: what the broker confirmed per delivered message (stream and sequence, delivery tag, entry id). */
export function receiptsPage(
  ctx: PageCtx,
  outbox: string,
  page: ReceiptPage,
  found: StoredReceipt | null | undefined,
  id: string | undefined,
): string {
  const lookup = html`<form class="search" method="get" action="${link(ctx, 'receipts')}" id="receipt-lookup">
      <input type="hidden" name="outbox" value="${outbox}" />
      <label>Message id<input type="text" name="id" value="${id ?? ''}" placeholder="42" /></label
      ><button type="submit">Find</button>
    </form>
    ${found === null ? html`<p class="warn" id="receipt-missing">No receipt for message ${id}: not delivered through a publisher yet, or pruned.</p>` : ''}`;
  const list = found ? [found] : page.receipts;
  const body = html`${lookup}
    <table id="receipts">
      <thead>
        <tr>
          <th>Message id</th>
          <th>Delivered</th>
          <th>Broker</th>
          <th>Receipt</th>
        </tr>
      </thead>
      <tbody>
        ${list.map(
          (r) =>
            html`<tr data-message="${r.messageId}">
              <td class="n">${r.messageId}</td>
              <td>${when(r.deliveredAt, ctx.now)}</td>
              <td>${r.receipt.broker}</td>
              <td>${receiptFields(r)}</td>
            </tr>`,
        )}
        ${
          list.length === 0
            ? html`<tr>
                <td colspan="4">No receipts stored for this outbox.</td>
              </tr>`
            : ''
        }
      </tbody>
    </table>
    ${!found && page.next ? html`<p><a rel="next" href="${link(ctx, 'receipts', { outbox, cursor: page.next })}">Older →</a></p>` : ''}
    <p class="note">
      Written by the dispatcher when a publisher's broker confirms a message (then the message itself is acked and
      gone); pruned by <code>pruneReceipts</code>.
    </p>`;
  return layout(ctx, `Receipts of outbox ${outbox}`, 'outboxes', body);
}

/** A fire's boundary (the instant the spec named) from its job's header, or null. */
function boundaryOf(job: JobInfo): number | null {
  const t = job.headers[SCHEDULE_BOUNDARY_HEADER];
  return t !== undefined && /^\d{1,16}$/.test(t) ? Number(t) : null;
}

/** One schedule: its settings, next fire, and the recent fires whose jobs are still stored; `next` continues the search below them. */
export function schedulePage(
  ctx: PageCtx,
  s: Schedule,
  fires: readonly JobInfo[],
  next: string | null,
  looked: SearchResult,
): string {
  const rows = fires.map((j) => {
    const boundary = boundaryOf(j);
    const late = boundary === null ? null : j.enqueuedAt - boundary;
    return html`<tr data-job="${j.id}">
      <td class="n"><a href="${link(ctx, 'job', { queue: j.queue, id: String(j.id) })}">${j.id}</a></td>
      <td>
        ${boundary === null ? '–' : html`<time datetime="${new Date(boundary).toISOString()}">${new Date(boundary).toISOString()}</time>`}
      </td>
      <td>${when(j.enqueuedAt, ctx.now)}</td>
      <td class="n ${late !== null && late > 60_000 ? 'warn' : ''}">
        ${late === null ? '–' : late >= 0 ? ago(late) : `${ago(-late)} early (trigger)`}
      </td>
      <td class="${j.state === 'dead' ? 'dead' : ''}">${j.state}</td>
    </tr>`;
  });
  const body = html`<dl class="kv" id="schedule">
      <dt>Spec</dt>
      <dd><code>${s.spec}</code> (${s.timeZone})</dd>
      <dt>Queue</dt>
      <dd><a href="${link(ctx, 'queue', { name: s.queue })}">${s.queue}</a></dd>
      <dt>State</dt>
      <dd>${s.paused ? html`<span class="warn">paused</span>` : 'active'}</dd>
      <dt>Next fire</dt>
      <dd>${when(s.nextFireAt, ctx.now)}</dd>
      <dt>Payload</dt>
      <dd><pre>${payloadText(s.payload)}</pre></dd>
    </dl>
    <p>
      ${action(ctx, 'trigger', 'Trigger now', { schedule: s.name })}
      ${s.paused ? action(ctx, 'resume-schedule', 'Resume', { schedule: s.name }) : action(ctx, 'pause-schedule', 'Pause', { schedule: s.name })}
    </p>
    <h2>Recent fires</h2>
    ${live(
      'live-fires',
      html`<table id="fires">
        <thead>
          <tr>
            <th>Job</th>
            <th>Boundary</th>
            <th>Enqueued</th>
            <th>Late by</th>
            <th>State</th>
          </tr>
        </thead>
        <tbody>
          ${rows}${
            fires.length === 0
              ? html`<tr>
                  <td colspan="5">No stored job of this schedule.</td>
                </tr>`
              : ''
          }
        </tbody>
      </table>`,
    )}
    <p class="note">
      The jobs this schedule enqueued that are still in the jobs table (pending, running or dead), newest first, found
      by their <code>${SCHEDULE_NAME_HEADER}</code> header. An acked job is gone, and so is its fire; boundaries a
      catch-up policy skipped were never enqueued. ${lookedAt(looked)}
      ${
        next
          ? html`<a
              rel="next"
              id="older-fires"
              href="${link(ctx, 'queue', {
                name: s.queue,
                state: 'all',
                header: `${SCHEDULE_NAME_HEADER} = ${s.name}`,
                cursor: next,
              })}"
              >Older fires: search further →</a
            >`
          : ''
      }
    </p>`;
  return layout(ctx, `Schedule ${s.name}`, 'schedules', body);
}
