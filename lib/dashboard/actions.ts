import { resolveLimits, type QueueLimits } from '../contract/limits.js';
import { resolveRateLimit } from '../contract/queue-settings.js';
import { AlkstoreError } from '../contract/errors.js';
import type { RateLimit, Store } from '../contract/types.js';
import { isWorkflowsQueue, queueHandle, setPaused } from './data.js';
import { BadJobForm, enqueueOpts, readJobForm, runAtText, type JobFormInput } from './job-forms.js';
import { describeFilter, readFilter, type JobFilter } from './search-query.js';

/** The dashboard's POST actions. */
export const ACTIONS = [
  'redrive',
  'purge',
  'redrive-all',
  'purge-all',
  'cancel',
  'cancel-flow',
  'pause',
  'resume',
  'limits',
  'trigger',
  'pause-schedule',
  'resume-schedule',
  'bulk-retry',
  'bulk-delete',
  'bulk-cancel',
  'selected-retry',
  'selected-cancel',
  'selected-delete',
  'enqueue',
  'edit',
] as const;
export type Action = (typeof ACTIONS)[number];

/** The actions on every job a filter matches: counted, confirmed, run in the background, audited. */
export type BulkAction = 'bulk-retry' | 'bulk-delete' | 'bulk-cancel';
export function isBulk(action: Action): action is BulkAction {
  return action === 'bulk-retry' || action === 'bulk-delete' || action === 'bulk-cancel';
}

/** A form field the operator (or a forged request) got wrong. */
export class BadRequest extends Error {}

/** One action as the form asked for it, checked. */
export interface ActionRequest {
  readonly action: Action;
  readonly queue: string | undefined;
  readonly schedule: string | undefined;
  readonly id: number | undefined;
  /** Where a single-job action was started (`job`: its detail page). */
  readonly from: 'job' | undefined;
  /** The filter of a bulk action. */
  readonly filter: JobFilter | undefined;
  /** The job of an `enqueue` or `edit`. */
  readonly job: JobFormInput | undefined;
  /** The limits a `limits` action stores (every field given: null clears it). */
  readonly limits: QueueFormLimits | undefined;
  /** The hand-picked jobs of a `selected-*` action, ascending. */
  readonly ids: readonly number[] | undefined;
  /** The fields the confirmation form posts again. */
  readonly fields: Record<string, string>;
}

export const DONE_TEXT: Record<Action, (n: number) => string> = {
  redrive: (n) => (n > 0 ? 'Retried the job: it is pending again.' : 'Nothing retried.'),
  purge: (n) => (n > 0 ? 'Deleted the job.' : 'Nothing deleted: the job is no longer dead.'),
  'redrive-all': (n) => `Retried ${n} dead job${n === 1 ? '' : 's'}.`,
  'purge-all': (n) => `Deleted ${n} dead job${n === 1 ? '' : 's'}.`,
  cancel: (n) => (n > 0 ? 'Cancelled the job.' : 'Nothing cancelled: the job is gone.'),
  'cancel-flow': (n) => `Cancelled the flow: ${n} job${n === 1 ? '' : 's'} ended.`,
  pause: () => 'Paused the queue on every replica.',
  resume: () => 'Resumed the queue.',
  limits: () => 'Saved the limits: every worker claims under them from now on.',
  trigger: (n) => (n > 0 ? `Triggered the schedule: job ${n} enqueued.` : 'No such schedule.'),
  'pause-schedule': () => 'Paused the schedule: it fires nothing until resumed.',
  'resume-schedule': () => 'Resumed the schedule.',
  'bulk-retry': (n) => `Started: retrying ${n} matching job${n === 1 ? '' : 's'}.`,
  'bulk-delete': (n) => `Started: deleting ${n} matching job${n === 1 ? '' : 's'}.`,
  'bulk-cancel': (n) => `Started: cancelling ${n} matching job${n === 1 ? '' : 's'}.`,
  'selected-retry': (n) => `Retried ${n} selected dead job${n === 1 ? '' : 's'}.`,
  'selected-cancel': (n) => `Cancelled ${n} selected job${n === 1 ? '' : 's'}.`,
  'selected-delete': (n) => `Deleted ${n} selected job${n === 1 ? '' : 's'}.`,
  enqueue: (n) => (n > 0 ? `Enqueued job ${n}.` : 'Nothing enqueued.'),
  edit: (n) =>
    n > 0 ? 'Saved the edit.' : 'Nothing changed: the job is no longer pending (a worker claimed it, or it finished).',
};

/** How many conflicting ids a redrive's flash names (the count is always exact). */
export const FLASH_IDS = 20;

/** The flash's sentence about jobs a redrive left dead because a live job holds their unique key. */
export function conflictText(count: number, ids: readonly number[]): string {
  if (count === 0) return '';
  const named =
    ids.length === 0
      ? ''
      : ` (${count > ids.length ? 'first ids' : ids.length === 1 ? 'id' : 'ids'} ${ids.join(', ')})`;
  return ` ${count} stayed dead: a live job holds ${count === 1 ? 'its' : 'their'} unique key${named}. Cancel or finish it, then retry again.`;
}

/** What an action did: a count, and for a redrive the jobs it left dead (unique key held). */
export interface ActionResult {
  n: number;
  conflicts?: readonly number[];
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= 2048 ? v : undefined;
}

/** A field of a parsed form or query. */
export function field(source: unknown, name: string): string | undefined {
  return source && typeof source === 'object' ? str((source as Record<string, unknown>)[name]) : undefined;
}

/** The queue limits the queue page's form sets: all of them at once, an empty field clearing its limit. */
export interface QueueFormLimits extends Required<QueueLimits> {
  /** The queue-wide claim cap (`queue.setRateLimit`), or null for none. */
  readonly rateLimit: RateLimit | null;
}

const LIMIT_FIELDS = [
  'concurrencyLimit',
  'globalConcurrency',
  'keyRateMax',
  'keyRatePerMs',
  'rateMax',
  'ratePerMs',
] as const;

function limitField(body: unknown, name: string): number | null {
  const raw = body && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
  if (raw === undefined || raw === '') return null;
  if (typeof raw !== 'string' || !/^\d{1,10}$/.test(raw.trim()) || Number(raw) < 1)
    throw new BadRequest(`${name} must be a whole number of at least 1, or empty for none`);
  return Number(raw);
}

function rateField(body: unknown, max: string, perMs: string): RateLimit | null {
  const m = limitField(body, max);
  const p = limitField(body, perMs);
  if ((m === null) !== (p === null))
    throw new BadRequest(`${max} and ${perMs} go together: give both, or leave both empty for none`);
  return m === null || p === null ? null : { max: m, perMs: p };
}

/** Reads the queue page's limits form: BadRequest naming the field, before any I/O. */
export function readLimits(body: unknown): QueueFormLimits {
  const limits = {
    concurrencyLimit: limitField(body, 'concurrencyLimit'),
    globalConcurrency: limitField(body, 'globalConcurrency'),
    keyRateLimit: rateField(body, 'keyRateMax', 'keyRatePerMs'),
  };
  const rateLimit = rateField(body, 'rateMax', 'ratePerMs');
  try {
    resolveLimits(limits);
    resolveRateLimit(rateLimit);
  } catch (err) {
    throw new BadRequest(err instanceof AlkstoreError ? err.message : String(err));
  }
  return { ...limits, rateLimit };
}

function rateText(r: RateLimit | null): string {
  return r === null ? 'none' : `${r.max} per ${r.perMs} ms`;
}

/** The limits in words, for the confirmation and the audit log. */
export function limitsText(l: QueueFormLimits): string {
  return (
    `concurrency per key ${l.concurrencyLimit ?? '1 (default)'}, global concurrency ${l.globalConcurrency ?? 'none'}, ` +
    `rate limit per key ${rateText(l.keyRateLimit)}, queue rate limit ${rateText(l.rateLimit)}`
  );
}

/** Most jobs one selection acts on (two pages of the largest page size). */
export const MAX_SELECTED = 400;

/** The `ids` of a selection: repeated fields (Express) or one comma list (the dashboard's own parser, a confirmation). */
function selectedIds(body: unknown): number[] {
  const raw = body && typeof body === 'object' ? (body as Record<string, unknown>).ids : undefined;
  const parts = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => (typeof v === 'string' ? v.split(',') : []));
  const ids = [...new Set(parts.filter((p) => /^\d{1,16}$/.test(p)).map(Number))].sort((a, b) => a - b);
  if (ids.length === 0 || ids.length !== new Set(parts).size)
    throw new BadRequest('ids: select at least one job (job ids only); tick the boxes of the rows to act on');
  if (ids.length > MAX_SELECTED) throw new BadRequest(`ids: select at most ${MAX_SELECTED} jobs at once`);
  return ids;
}

/** Reads and checks an action form (before any I/O). */
export function readAction(body: unknown): ActionRequest {
  const action = field(body, 'action') as Action | undefined;
  if (!action || !ACTIONS.includes(action)) throw new BadRequest('unknown action');
  const fields: Record<string, string> = { action };
  if (isBulk(action)) {
    let filter: JobFilter;
    try {
      filter = readFilter(body, 'all');
    } catch (err) {
      throw new BadRequest(err instanceof Error ? err.message : String(err));
    }
    Object.assign(fields, filter.params);
    return {
      action,
      queue: filter.queue,
      schedule: undefined,
      id: undefined,
      from: undefined,
      filter,
      job: undefined,
      limits: undefined,
      ids: undefined,
      fields,
    };
  }
  const queue = field(body, 'queue');
  const schedule = field(body, 'schedule');
  const idText = field(body, 'id');
  const id = idText !== undefined && /^\d{1,16}$/.test(idText) ? Number(idText) : undefined;
  const onSchedule = action === 'trigger' || action === 'pause-schedule' || action === 'resume-schedule';
  if (onSchedule ? !schedule : !queue) throw new BadRequest(onSchedule ? 'schedule is required' : 'queue is required');
  if ((action === 'pause' || action === 'purge' || action === 'purge-all') && queue && isWorkflowsQueue(queue))
    throw new BadRequest(
      `queue ${JSON.stringify(queue)} carries workflow runs: the dashboard does not ${action === 'pause' ? 'pause it' : 'delete its jobs'}, ` +
        'as that would stall or lose runs; to stop one run, cancel it from its page under Workflows',
    );
  if (
    (action === 'redrive' ||
      action === 'purge' ||
      action === 'cancel' ||
      action === 'cancel-flow' ||
      action === 'edit') &&
    id === undefined
  )
    throw new BadRequest('id must be a job id');
  let limits: QueueFormLimits | undefined;
  if (action === 'limits') {
    limits = readLimits(body);
    for (const k of LIMIT_FIELDS) {
      const v = field(body, k);
      if (v !== undefined) fields[k] = v.trim();
    }
  }
  let job: JobFormInput | undefined;
  if (action === 'enqueue' || action === 'edit') {
    try {
      job = readJobForm(body);
    } catch (err) {
      throw new BadRequest(err instanceof BadJobForm ? err.message : String(err));
    }
    if (action === 'enqueue' && job.payload === undefined)
      throw new BadRequest('payload is required: the job\'s JSON, such as {"orderId": 42}');
    if (action === 'edit' && job.payload === undefined && job.priority === undefined && job.runAt === undefined)
      throw new BadRequest('the edit changes nothing: give a payload, a priority or a run time');
    if (job.payloadText !== undefined) fields.payload = job.payloadText;
    if (job.priority !== undefined) fields.priority = String(job.priority);
    const runAt = field(body, 'runAt');
    if (job.runAt !== undefined && runAt) fields.runAt = runAt;
  }
  if (queue) fields.queue = queue;
  if (schedule) fields.schedule = schedule;
  if (id !== undefined) fields.id = String(id);
  let ids: number[] | undefined;
  if (action.startsWith('selected-')) {
    ids = selectedIds(body);
    fields.ids = ids.join(',');
  }
  const from = field(body, 'back') === 'job' ? 'job' : undefined;
  if (from) fields.back = from;
  return { action, queue, schedule, id, from, filter: undefined, job, limits, ids, fields };
}

/** The confirmation question (bulk actions get the count of matching jobs). */
export function question(a: ActionRequest, matched: number): string {
  const q = JSON.stringify(a.queue);
  switch (a.action) {
    case 'redrive':
      return `Retry dead job ${a.id} of queue ${q}? It goes back to pending with its attempts reset.`;
    case 'purge':
      return `Delete dead job ${a.id} of queue ${q}? It is deleted for good.`;
    case 'redrive-all':
      return `Retry every dead job of queue ${q}? They all go back to pending with their attempts reset.`;
    case 'purge-all':
      return `Delete every dead job of queue ${q}? They are deleted for good.`;
    case 'cancel':
      return `Cancel job ${a.id} of queue ${q}? It ends as cancelled whatever its state (never retried); a running handler's abort signal fires.`;
    case 'cancel-flow':
      return (
        `Cancel the flow of job ${a.id} of queue ${q}? The job and every dependency below it still pending or ` +
        `running (any queue) end as cancelled; running handlers' abort signals fire.`
      );
    case 'pause':
      return `Pause queue ${q} on every replica? Jobs already running finish; nothing new is handed out until resumed.`;
    case 'resume':
      return `Resume queue ${q}?`;
    case 'limits':
      return `Set the limits of queue ${q} on every replica to: ${limitsText(a.limits!)}? Jobs already running keep their slots; claims follow the new limits.`;
    case 'trigger':
      return `Trigger schedule ${JSON.stringify(a.schedule)} now? One job is enqueued; its next fire stays as it is.`;
    case 'pause-schedule':
      return `Pause schedule ${JSON.stringify(a.schedule)}? It fires nothing until resumed.`;
    case 'resume-schedule':
      return `Resume schedule ${JSON.stringify(a.schedule)}?`;
    case 'bulk-retry':
      return (
        `Retry ${matched} job${matched === 1 ? '' : 's'} of queue ${q} matching ${describeFilter(a.filter!)}? ` +
        `Dead ones go back to pending with their attempts reset; others are left as they are.`
      );
    case 'selected-retry':
      return (
        `Retry the ${a.ids!.length} selected job${a.ids!.length === 1 ? '' : 's'} of queue ${q} ` +
        `(${idList(a.ids!)})? Dead ones go back to pending with their attempts reset; others are left as they are.`
      );
    case 'selected-cancel':
      return (
        `Cancel the ${a.ids!.length} selected job${a.ids!.length === 1 ? '' : 's'} of queue ${q} (${idList(a.ids!)})? ` +
        `Pending and running ones end as cancelled (running handlers are signalled to stop); others are left as they are.`
      );
    case 'selected-delete':
      return (
        `Delete the ${a.ids!.length} selected job${a.ids!.length === 1 ? '' : 's'} of queue ${q} ` +
        `(${idList(a.ids!)})? Dead ones are deleted for good, live ones cancelled; finished history is left as it is.`
      );
    case 'enqueue':
      return (
        `Enqueue a job on queue ${q} with priority ${a.job!.priority ?? 0}, to run ${runAtText(a.job!, 'now')}? ` +
        `Payload: ${a.job!.payloadText!.slice(0, 500)}${a.job!.payloadText!.length > 500 ? '…' : ''}`
      );
    case 'edit':
      return (
        `Save job ${a.id} of queue ${q}${a.job!.priority !== undefined ? ` with priority ${a.job!.priority}` : ''}, ` +
        `to run ${runAtText(a.job!, 'when it was due')}${
          a.job!.payloadText !== undefined
            ? `, payload ${a.job!.payloadText.slice(0, 500)}${a.job!.payloadText.length > 500 ? '…' : ''}`
            : ''
        }? ` +
        `Only while it is still pending.`
      );
    case 'bulk-cancel':
      return (
        `Cancel ${matched} job${matched === 1 ? '' : 's'} of queue ${q} matching ${describeFilter(a.filter!)}? ` +
        `Pending and running ones end as cancelled (running handlers are signalled to stop, never retried); ` +
        `dead ones and finished history are left as they are.`
      );
    case 'bulk-delete':
      return (
        `Delete ${matched} job${matched === 1 ? '' : 's'} of queue ${q} matching ${describeFilter(a.filter!)}? ` +
        `Dead ones are deleted for good, live ones cancelled (running handlers are signalled to stop); finished history is left as it is.`
      );
  }
}

function idList(ids: readonly number[]): string {
  return ids.length > 20 ? `${ids.slice(0, 20).join(', ')}, …` : ids.join(', ');
}

/** Runs a single (not bulk) action: how many things it changed, and the jobs a redrive left dead. */
export async function runAction(store: Store, a: ActionRequest): Promise<ActionResult> {
  const admin = store.admin();
  switch (a.action) {
    case 'redrive': {
      const r = await queueHandle(store, a.queue!).retryDead([a.id!]);
      return { n: r.moved, conflicts: r.conflictIds };
    }
    case 'purge':
      return { n: await queueHandle(store, a.queue!).purgeDead([a.id!]) };
    case 'redrive-all': {
      const r = await admin.retryAllDead(a.queue!);
      return { n: r.moved, conflicts: r.conflictIds };
    }
    case 'purge-all':
      return { n: await admin.purgeAllDead(a.queue!) };
    case 'cancel':
      return { n: (await queueHandle(store, a.queue!).cancel(a.id!)) ? 1 : 0 };
    case 'cancel-flow':
      return { n: await queueHandle(store, a.queue!).cancelFlow(a.id!) };
    case 'pause':
    case 'resume':
      await setPaused(store, a.queue!, a.action === 'pause');
      return { n: 1 };
    case 'limits': {
      const { rateLimit, ...limits } = a.limits!;
      const q = queueHandle(store, a.queue!);
      await q.setLimits(limits);
      await q.setRateLimit(rateLimit);
      return { n: 1 };
    }
    case 'trigger':
      return { n: (await store.triggerSchedule(a.schedule!)) ?? 0 };
    case 'pause-schedule':
      return { n: (await store.pauseSchedule(a.schedule!)) ? 1 : 0 };
    case 'resume-schedule':
      return { n: (await store.resumeSchedule(a.schedule!)) ? 1 : 0 };
    case 'enqueue':
      return { n: await queueHandle(store, a.queue!).enqueue(a.job!.payload!.value, enqueueOpts(a.job!)) };
    case 'edit': {
      const j = a.job!;
      const runAt = j.runAt === 'now' ? await store.now() : j.runAt;
      const edit = {
        ...(j.payload ? { payload: j.payload.value } : {}),
        ...(j.priority !== undefined ? { priority: j.priority } : {}),
        ...(runAt !== undefined ? { runAt } : {}),
      };
      return { n: (await admin.editJob(a.queue!, a.id!, edit)) ? 1 : 0 };
    }
    case 'selected-retry': {
      const r = await queueHandle(store, a.queue!).retryDead(a.ids!);
      return { n: r.moved, conflicts: r.conflictIds };
    }
    case 'selected-cancel': {
      const q = queueHandle(store, a.queue!);
      let n = 0;
      for (const id of a.ids!) if (await q.cancel(id)) n++;
      return { n };
    }
    case 'selected-delete': {
      const q = queueHandle(store, a.queue!);
      let n = await q.purgeDead(a.ids!);
      for (const id of a.ids!) if (await q.cancel(id)) n++;
      return { n };
    }
    case 'bulk-retry':
    case 'bulk-delete':
    case 'bulk-cancel':
      throw new BadRequest('a bulk action runs in the background');
  }
}

/** Where the browser goes after the action. */
export function backTo(base: string, a: ActionRequest): string {
  const qs = (p: Record<string, string>) => new URLSearchParams(p).toString();
  if (a.action === 'trigger' || a.action === 'pause-schedule' || a.action === 'resume-schedule')
    return `${base}/schedules`;
  if (a.action === 'pause' || a.action === 'resume') return base;
  if (a.action === 'limits') return `${base}/queue?${qs({ name: a.queue! })}`;
  if (a.action === 'edit') return `${base}/job?${qs({ queue: a.queue!, id: String(a.id) })}`;
  if (a.action === 'enqueue') return `${base}/queue?${qs({ name: a.queue! })}`;
  if (a.from === 'job' && (a.action === 'redrive' || a.action === 'cancel-flow'))
    return `${base}/job?${qs({ queue: a.queue!, id: String(a.id) })}`;
  if (a.action.startsWith('selected-')) return `${base}/queue?${qs({ name: a.queue!, state: 'all' })}`;
  if (a.action === 'cancel' || a.from === 'job') return `${base}/queue?${qs({ name: a.queue! })}`;
  return `${base}/dead?${qs({ queue: a.queue! })}`;
}
