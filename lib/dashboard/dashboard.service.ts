import { AlkstoreError } from '../contract/errors.js';
import type { JobListState } from '../contract/admin.js';
import type { Store } from '../contract/types.js';
import { CSRF_COOKIE, CsrfTokens, readCookie } from './csrf.js';
import { outboxOf, queueHandle, queueRows, setPaused } from './data.js';
import { formBody, FormTooLarge } from './form-body.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { confirmPage, deadPage, messagePage, outboxesPage, queuePage, queuesPage, schedulesPage, streamsPage, type PageCtx } from './pages.js';

/** The request fields the dashboard reads (Express and Fastify requests both have them). */
export interface DashboardRequest {
  readonly method: string;
  readonly url: string;
  readonly originalUrl?: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly query?: unknown;
  readonly body?: unknown;
  /** Express: set on HTTPS requests. */
  readonly secure?: boolean;
  /** Fastify (and Express): `https` on HTTPS requests. */
  readonly protocol?: string;
}

/** A response to send: status, headers, body. */
export interface DashboardReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const HOUR = 3_600_000;
const STATES: readonly JobListState[] = ['pending', 'scheduled', 'processing', 'dead', 'all'];
const ACTIONS = ['redrive', 'purge', 'redrive-all', 'purge-all', 'cancel', 'pause', 'resume', 'trigger'] as const;
type Action = (typeof ACTIONS)[number];

const DONE_TEXT: Record<Action, (n: number) => string> = {
  redrive: (n) => (n > 0 ? 'Redrove the job: it is pending again.' : 'Nothing redriven.'),
  purge: (n) => (n > 0 ? 'Purged the job.' : 'Nothing purged: the job is no longer dead.'),
  'redrive-all': (n) => `Redrove ${n} dead job${n === 1 ? '' : 's'}.`,
  'purge-all': (n) => `Purged ${n} dead job${n === 1 ? '' : 's'}.`,
  cancel: (n) => (n > 0 ? 'Cancelled the job.' : 'Nothing cancelled: the job is gone.'),
  pause: () => 'Paused the queue on every replica.',
  resume: () => 'Resumed the queue.',
  trigger: (n) => (n > 0 ? `Triggered the schedule: job ${n} enqueued.` : 'No such schedule.'),
};

/** How many conflicting ids a redrive's flash names (the count is always exact). */
const FLASH_IDS = 20;

/** The flash's sentence about jobs a redrive left dead because a live job holds their unique key. */
function conflictText(count: number, ids: readonly number[]): string {
  if (count === 0) return '';
  const named = ids.length === 0 ? '' : ` (${count > ids.length ? 'first ids' : ids.length === 1 ? 'id' : 'ids'} ${ids.join(', ')})`;
  return ` ${count} stayed dead: a live job holds ${count === 1 ? 'its' : 'their'} unique key${named}. Cancel or finish it, then redrive again.`;
}

/** What an action did: a count, and for a redrive the jobs it left dead (unique key held). */
interface ActionResult {
  n: number;
  conflicts?: readonly number[];
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v.length > 0 && v.length <= 2048 ? v : undefined;
}

function field(source: unknown, name: string): string | undefined {
  return source && typeof source === 'object' ? str((source as Record<string, unknown>)[name]) : undefined;
}

class BadRequest extends Error {}

/** Renders pages and runs actions; the controller only moves requests and replies. */
export class DashboardService {
  private readonly csrf: CsrfTokens;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedDashboardOptions,
  ) {
    this.csrf = new CsrfTokens(options.csrfSecret);
  }

  /** Every GET page. `page` is the route under the mount path. */
  async page(req: DashboardRequest, page: string): Promise<DashboardReply> {
    const { ctx, cookie } = await this.context(req);
    try {
      const body = await this.render(ctx, page, req.query);
      return this.reply(200, body, cookie);
    } catch (err) {
      return this.failure(ctx, err, cookie);
    }
  }

  /** 404 for anything else under the mount path (reached only through the guard). */
  async notFound(req: DashboardRequest): Promise<DashboardReply> {
    const { ctx, cookie } = await this.context(req);
    return this.reply(404, messagePage(ctx, 'Not found', 'There is no such dashboard page.'), cookie);
  }

  /** POST /action: CSRF check, then a confirmation page, then (with confirm=yes) the action and a 303 back. */
  async action(req: DashboardRequest): Promise<DashboardReply> {
    const { ctx, cookie, nonce } = await this.context(req);
    if (this.options.readOnly) return this.reply(403, messagePage(ctx, 'Read-only', 'This dashboard is read-only: actions are disabled.'), cookie);
    let body: unknown;
    try {
      body = await formBody(req);
    } catch (err) {
      if (err instanceof FormTooLarge) return this.reply(413, messagePage(ctx, 'Form too large', err.message), cookie);
      throw err;
    }
    if (!this.sameOrigin(req) || !this.csrf.verify(nonce, field(body, 'csrf'))) {
      return this.reply(403, messagePage(ctx, 'Refused', 'The form is stale or came from another site (CSRF check failed). Reload the page and try again.'), cookie);
    }
    try {
      const action = field(body, 'action') as Action | undefined;
      if (!action || !ACTIONS.includes(action)) throw new BadRequest('unknown action');
      const queue = field(body, 'queue');
      const schedule = field(body, 'schedule');
      const idText = field(body, 'id');
      const id = idText !== undefined && /^\d{1,16}$/.test(idText) ? Number(idText) : undefined;
      const needsId = action === 'redrive' || action === 'purge' || action === 'cancel';
      if (action === 'trigger' ? !schedule : !queue) throw new BadRequest(action === 'trigger' ? 'schedule is required' : 'queue is required');
      if (needsId && id === undefined) throw new BadRequest('id must be a job id');
      const fields: Record<string, string> = { action };
      if (queue) fields.queue = queue;
      if (schedule) fields.schedule = schedule;
      if (id !== undefined) fields.id = String(id);
      const back = this.backTo(ctx, action, queue);
      if (field(body, 'confirm') !== 'yes') {
        return this.reply(200, confirmPage(ctx, this.question(action, queue, schedule, id), fields, back), cookie);
      }
      const { n, conflicts } = await this.run(action, queue, schedule, id);
      const sep = back.includes('?') ? '&' : '?';
      const held = conflicts !== undefined && conflicts.length > 0 ? `&c=${conflicts.length}&cids=${conflicts.slice(0, FLASH_IDS).join(',')}` : '';
      return { status: 303, headers: { ...this.securityHeaders(), location: `${back}${sep}done=${action}&n=${n}${held}` }, body: '' };
    } catch (err) {
      return this.failure(ctx, err, cookie);
    }
  }

  private async run(action: Action, queue: string | undefined, schedule: string | undefined, id: number | undefined): Promise<ActionResult> {
    const admin = this.store.admin();
    switch (action) {
      case 'redrive': {
        const r = await queueHandle(this.store, queue!).retryDead([id!]);
        return { n: r.moved, conflicts: r.conflictIds };
      }
      case 'purge':
        return { n: await queueHandle(this.store, queue!).purgeDead([id!]) };
      case 'redrive-all': {
        const r = await admin.retryAllDead(queue!);
        return { n: r.moved, conflicts: r.conflictIds };
      }
      case 'purge-all':
        return { n: await admin.purgeAllDead(queue!) };
      case 'cancel':
        return { n: (await queueHandle(this.store, queue!).cancel(id!)) ? 1 : 0 };
      case 'pause':
      case 'resume':
        await setPaused(this.store, queue!, action === 'pause');
        return { n: 1 };
      case 'trigger':
        return { n: (await this.store.triggerSchedule(schedule!)) ?? 0 };
    }
  }

  private question(action: Action, queue: string | undefined, schedule: string | undefined, id: number | undefined): string {
    const q = JSON.stringify(queue);
    switch (action) {
      case 'redrive':
        return `Redrive dead job ${id} of queue ${q}? It goes back to pending with its attempts reset.`;
      case 'purge':
        return `Purge dead job ${id} of queue ${q}? It is deleted for good.`;
      case 'redrive-all':
        return `Redrive every dead job of queue ${q}? They all go back to pending with their attempts reset.`;
      case 'purge-all':
        return `Purge every dead job of queue ${q}? They are deleted for good.`;
      case 'cancel':
        return `Cancel job ${id} of queue ${q}? It is deleted whatever its state; a running handler is not interrupted.`;
      case 'pause':
        return `Pause queue ${q} on every replica? Jobs already running finish; nothing new is handed out until resumed.`;
      case 'resume':
        return `Resume queue ${q}?`;
      case 'trigger':
        return `Trigger schedule ${JSON.stringify(schedule)} now? One job is enqueued; its next fire stays as it is.`;
    }
  }

  private backTo(ctx: PageCtx, action: Action, queue: string | undefined): string {
    if (action === 'trigger') return `${ctx.base}/schedules`;
    if (action === 'pause' || action === 'resume') return ctx.base;
    if (action === 'cancel') return `${ctx.base}/queue?${new URLSearchParams({ name: queue! }).toString()}`;
    return `${ctx.base}/dead?${new URLSearchParams({ queue: queue! }).toString()}`;
  }

  private async render(ctx: PageCtx, page: string, query: unknown): Promise<string> {
    const admin = this.store.admin();
    switch (page) {
      case '': {
        const { rows, throughput } = await queueRows(this.store, ctx.now);
        return queuesPage(ctx, rows, throughput);
      }
      case 'queue': {
        const name = field(query, 'name');
        if (!name) throw new BadRequest('name is required');
        const stateText = field(query, 'state') ?? 'pending';
        const state = STATES.find((s) => s === stateText);
        if (!state) throw new BadRequest(`state must be one of ${STATES.join(', ')}`);
        const [page, rows, throughput] = await Promise.all([
          admin.listJobs(name, { state, cursor: field(query, 'cursor'), limit: 50 }),
          queueRows(this.store, ctx.now).then((r) => r.rows),
          admin.throughput(name, ctx.now - HOUR),
        ]);
        return queuePage(ctx, rows.find((r) => r.name === name) ?? null, name, state, page.jobs, page.next, throughput);
      }
      case 'dead': {
        const queue = field(query, 'queue') ?? null;
        const [{ rows }, page] = await Promise.all([
          queueRows(this.store, ctx.now),
          queue === null ? Promise.resolve({ jobs: [], next: null }) : admin.listJobs(queue, { state: 'dead', cursor: field(query, 'cursor'), limit: 50 }),
        ]);
        return deadPage(ctx, rows, queue, page.jobs, page.next);
      }
      case 'schedules': {
        const listing = await this.store.listSchedules();
        return schedulesPage(ctx, listing.leader, listing.schedules);
      }
      case 'streams': {
        const streams = await admin.streams({ after: field(query, 'after'), limit: 200 });
        return streamsPage(ctx, streams, streams.length === 200 ? streams[199]!.name : null);
      }
      case 'outboxes': {
        const { rows, throughput } = await queueRows(this.store, ctx.now);
        return outboxesPage(ctx, rows.filter((r) => outboxOf(r.name) !== null), throughput);
      }
      default:
        throw new BadRequest('no such page');
    }
  }

  private async context(req: DashboardRequest): Promise<{ ctx: PageCtx; cookie: string | null; nonce: string | undefined }> {
    let nonce = readCookie(req.headers.cookie, CSRF_COOKIE);
    let cookie: string | null = null;
    const base = this.baseOf(req);
    if (!nonce) {
      nonce = this.csrf.newNonce();
      const secure = req.secure === true || req.protocol === 'https' || req.headers['x-forwarded-proto'] === 'https';
      cookie = `${CSRF_COOKIE}=${nonce}; Path=${base}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
    }
    const done = field(req.query, 'done') as Action | undefined;
    const n = Number(field(req.query, 'n') ?? '0');
    const c = Number(field(req.query, 'c') ?? '0');
    const cids = (field(req.query, 'cids') ?? '').split(',').filter((x) => /^\d{1,16}$/.test(x)).slice(0, FLASH_IDS).map(Number);
    const redrive = done === 'redrive' || done === 'redrive-all';
    const held = redrive && Number.isSafeInteger(c) && c > 0 ? conflictText(c, cids) : '';
    const flash = done && ACTIONS.includes(done) && Number.isSafeInteger(n) ? DONE_TEXT[done](n) + held : null;
    let now = Date.now();
    try {
      now = await this.store.now();
    } catch {
      // The page itself reports the database error.
    }
    return { ctx: { base, csrf: this.csrf.tokenFor(nonce), readOnly: this.options.readOnly, now, flash }, cookie, nonce: readCookie(req.headers.cookie, CSRF_COOKIE) };
  }

  /** The mount path as the browser addressed it (global prefix included). */
  private baseOf(req: DashboardRequest): string {
    const pathname = (req.originalUrl ?? req.url).split('?')[0]!;
    const mount = this.options.path;
    const i = pathname.lastIndexOf(mount);
    return i >= 0 ? pathname.slice(0, i + mount.length) : mount;
  }

  private sameOrigin(req: DashboardRequest): boolean {
    const site = req.headers['sec-fetch-site'];
    if (typeof site === 'string' && site !== 'same-origin' && site !== 'none') return false;
    const origin = req.headers.origin;
    if (typeof origin === 'string' && origin !== 'null') {
      try {
        return new URL(origin).host === req.headers.host;
      } catch {
        return false;
      }
    }
    return true;
  }

  private failure(ctx: PageCtx, err: unknown, cookie: string | null): DashboardReply {
    if (err instanceof BadRequest || err instanceof AlkstoreError || err instanceof RangeError) {
      const status = err instanceof AlkstoreError && err.code === 'DATABASE' ? 503 : 400;
      return this.reply(status, messagePage(ctx, status === 503 ? 'Database unavailable' : 'Bad request', err.message), cookie);
    }
    throw err;
  }

  private securityHeaders(): Record<string, string> {
    return {
      'cache-control': 'no-store',
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'same-origin',
    };
  }

  private reply(status: number, body: string, cookie: string | null): DashboardReply {
    const headers: Record<string, string> = { ...this.securityHeaders(), 'content-type': 'text/html; charset=utf-8' };
    if (cookie) headers['set-cookie'] = cookie;
    return { status, headers, body };
  }
}
