import type { JobDetail } from '../contract/admin.js';
import type { JobOpts } from '../contract/options.js';
import { FORM_LIMIT } from './form-body.js';
import { html, type SafeHtml } from './html.js';
import { layout, link, type PageCtx } from './layout.js';
import { instant } from './search-query.js';

/** A job form's fields, read and checked before any I/O (the operator's typing errors name the field). */
export interface JobFormInput {
  /** The payload, parsed; absent only when the form left it out. */
  readonly payload: { value: unknown } | undefined;
  readonly payloadText: string | undefined;
  readonly priority: number | undefined;
  /** Epoch ms, or `now` (the database clock at the write). */
  readonly runAt: number | 'now' | undefined;
}

/** A form field the operator typed wrong. */
export class BadJobForm extends Error {}

function raw(source: unknown, name: string, max: number): string | undefined {
  if (!source || typeof source !== 'object') return undefined;
  const v = (source as Record<string, unknown>)[name];
  if (typeof v !== 'string') return undefined;
  const t = v.trim();
  if (t.length > max) throw new BadJobForm(`${name} must be at most ${max} characters`);
  return t.length > 0 ? t : undefined;
}

/** Reads `payload` (JSON), `priority` (integer) and `runAt` (`now`, a UTC date-time, or empty) of a create or edit form. */
export function readJobForm(source: unknown): JobFormInput {
  const payloadText = raw(source, 'payload', FORM_LIMIT);
  let payload: { value: unknown } | undefined;
  if (payloadText !== undefined) {
    try {
      payload = { value: JSON.parse(payloadText) as unknown };
    } catch (err) {
      throw new BadJobForm(
        `payload must be JSON, such as {"orderId": 42} (${err instanceof Error ? err.message : String(err)})`,
      );
    }
  }
  const priorityText = raw(source, 'priority', 12);
  if (priorityText !== undefined && !/^-?\d{1,10}$/.test(priorityText))
    throw new BadJobForm('priority must be an integer such as 0 or 10 (higher runs first)');
  const priority = priorityText === undefined ? undefined : Number(priorityText);
  if (priority !== undefined && (priority < -2_147_483_648 || priority > 2_147_483_647))
    throw new BadJobForm('priority must be in the int32 range');
  const runAtText = raw(source, 'runAt', 40);
  let runAt: number | 'now' | undefined;
  if (runAtText === 'now') runAt = 'now';
  else if (runAtText !== undefined) {
    try {
      runAt = instant('runAt', runAtText);
    } catch (err) {
      throw new BadJobForm(err instanceof Error ? err.message : String(err));
    }
  }
  return { payload, payloadText, priority, runAt };
}

/** Enqueue options of a create form (an absent run time: now). */
export function enqueueOpts(f: JobFormInput): JobOpts {
  const opts: { priority?: number; runAt?: number } = {};
  if (f.priority !== undefined) opts.priority = f.priority;
  if (typeof f.runAt === 'number') opts.runAt = f.runAt;
  return opts;
}

/** The form's run time in words, for the confirmation question. */
export function runAtText(f: JobFormInput, unset: string): string {
  return f.runAt === undefined ? unset : f.runAt === 'now' ? 'now' : new Date(f.runAt).toISOString();
}

/** The largest payload an edit box carries: its urlencoded form must stay under the form limit with room to spare. */
export const EDITABLE_PAYLOAD_CHARS = Math.floor(FORM_LIMIT / 4);

function formFields(payload: string, priority: number, runAtPlaceholder: string): SafeHtml {
  const box =
    payload.length > EDITABLE_PAYLOAD_CHARS
      ? html`<p class="note" id="payload-read-only">
          The payload (${payload.length} characters) is above what the form can carry: it is read-only here (see Payload
          below). Priority and run time can still be changed.
        </p>`
      : html`<label
          >Payload (JSON)<textarea name="payload" id="payload-input" rows="12" cols="80" spellcheck="false" required>
${payload}</textarea>
        </label>`;
  return html`${box}
    <label>Priority<input type="number" name="priority" id="priority-input" value="${priority}" step="1" /></label>
    <label
      ><span>Run at (UTC): <code>now</code>, a date-time such as 2026-12-01T10:30:00, or empty</span
      ><input type="text" name="runAt" id="run-at-input" value="" placeholder="${runAtPlaceholder}"
    /></label>`;
}

/** The create page: a queue name and a job; posted as the `enqueue` action (confirmed, audited). */
export function newJobPage(ctx: PageCtx, queue: string | undefined): string {
  if (ctx.readOnly)
    return layout(
      ctx,
      'Enqueue a job',
      '',
      html`<p>This dashboard is read-only for you: creating jobs is disabled.</p>`,
    );
  const body = html`<form class="job-form" method="post" action="${ctx.base}/action" id="new-job">
      <input type="hidden" name="csrf" value="${ctx.csrf}" /><input type="hidden" name="action" value="enqueue" />
      <label>Queue<input type="text" name="queue" id="queue-input" value="${queue ?? ''}" required /></label>
      ${formFields('{}', 0, 'empty: now')}
      <button type="submit" id="enqueue">Enqueue…</button
      >${queue ? html` <a href="${link(ctx, 'queue', { name: queue })}">Cancel</a>` : ''}
    </form>
    <p class="note">
      The job is enqueued with the queue's options as this process knows them (defaults unless the app registered the
      queue here).
    </p>`;
  return layout(ctx, 'Enqueue a job', '', body);
}

/** The edit form of a pending job, on its detail page; posted as the `edit` action. */
export function editForm(ctx: PageCtx, job: JobDetail): SafeHtml {
  if (ctx.readOnly || job.state !== 'pending') return html``;
  return html`<details id="edit">
    <summary>Edit this pending job</summary>
    <form class="job-form" method="post" action="${ctx.base}/action" id="edit-job">
      <input type="hidden" name="csrf" value="${ctx.csrf}" /><input type="hidden" name="action" value="edit" />
      <input type="hidden" name="queue" value="${job.queue}" /><input
        type="hidden"
        name="id"
        value="${String(job.id)}"
      /><input type="hidden" name="back" value="job" />
      ${formFields(JSON.stringify(job.payload, null, 2) ?? 'null', job.priority, `empty: keep ${new Date(job.runAt).toISOString()}`)}
      <button type="submit" id="save-edit">Save…</button>
    </form>
    <p class="note">
      Saved only while the job is still pending: once a worker claims it, the edit is refused and nothing changes.
    </p>
  </details>`;
}
