import { randomBytes } from 'node:crypto';
import { AlkstoreError } from '../contract/errors.js';
import type { Store } from '../contract/types.js';
import {
  ACTIONS,
  backTo,
  BadRequest,
  conflictText,
  DONE_TEXT,
  field,
  FLASH_IDS,
  isBulk,
  limitsText,
  question,
  readAction,
  runAction,
  type Action,
  type ActionRequest,
} from './actions.js';
import { AUDIT_IDS, auditOfJob, readAudit, writeAudit, type AuditEntry } from './audit.js';
import { BulkRunner, countMatching, newOpId, type BulkKind, type BulkOp } from './bulk.js';
import { CSRF_COOKIE, CsrfTokens, readCookie, sameOriginRequest } from './csrf.js';
import { outboxOf, queueRows } from './data.js';
import type { DashboardRole, ResolvedDashboardOptions } from './dashboard.options.js';
import { formBody, FormTooLarge } from './form-body.js';
import { receiptsPage, schedulePage, workersPage } from './fleet-pages.js';
import { newJobPage } from './job-forms.js';
import { auditPage, bulkPage, jobPage, queuePage, readListView } from './job-pages.js';
import { mountOf, type RoutedRequest } from './mount.js';
import {
  confirmPage,
  deadPage,
  groupDead,
  messagePage,
  outboxesPage,
  queuesPage,
  schedulesPage,
  streamsPage,
  type PageCtx,
} from './pages.js';
import { BadFilter, describeFilter, readFilter } from './search-query.js';
import { searchUntil } from './search-more.js';
import type { JobListState } from '../contract/admin.js';
import { SCHEDULE_NAME_HEADER } from '../contract/schedule-headers.js';
import { workflowPages } from './workflow-pages.js';

/** The request fields the dashboard reads (Express and Fastify requests both have them; so does the standalone server's). */
export interface DashboardRequest extends RoutedRequest {
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

/** The pages under the mount path (`''` is the mount path itself). */
export type DashboardPage =
  | ''
  | 'queue'
  | 'job'
  | 'new'
  | 'dead'
  | 'schedules'
  | 'schedule'
  | 'streams'
  | 'outboxes'
  | 'receipts'
  | 'workers'
  | 'audit'
  | 'bulk';

/** Every page route under the mount (the mount itself aside). */
export const DASHBOARD_PAGES: readonly Exclude<DashboardPage, ''>[] = [
  'queue',
  'job',
  'new',
  'dead',
  'schedules',
  'schedule',
  'streams',
  'outboxes',
  'receipts',
  'workers',
  'audit',
  'bulk',
];

/** Dead jobs the dead-letter page groups by error (one keyset page, the oldest). */
const DEAD_GROUP_SCAN = 1000;

/** Fires a schedule page lists. */
const FIRES = 20;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Context {
  ctx: PageCtx;
  cookie: string | null;
  nonce: string | undefined;
  /** null: refused by `roles`. */
  role: DashboardRole | null;
  actor: string;
}

/** Renders pages and runs actions; the controller (or the standalone server) only moves requests and replies. */
export class DashboardService {
  private readonly csrf: CsrfTokens;
  private readonly bulk: BulkRunner;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedDashboardOptions,
  ) {
    this.csrf = new CsrfTokens(options.csrfSecret);
    this.bulk = new BulkRunner(store);
  }

  /** Every GET page. `page` is the route under the mount path. */
  async page(req: DashboardRequest, page: DashboardPage): Promise<DashboardReply> {
    const c = await this.context(req, page === '' ? '' : `/${page}`);
    if (c.role === null) return this.refused(c);
    try {
      const body = await this.render(c.ctx, page, req.query);
      return this.reply(200, body, c);
    } catch (err) {
      return this.failure(c, err);
    }
  }

  /**
   * GET /payload?queue=&id=: a job's whole payload as a JSON download (`Content-Disposition: attachment`),
   * for payloads too large for the page; behind the same guard and roles as every page.
   */
  async payload(req: DashboardRequest): Promise<DashboardReply> {
    const c = await this.context(req, '/payload');
    if (c.role === null) return this.refused(c);
    try {
      const queue = field(req.query, 'queue');
      const idText = field(req.query, 'id');
      if (!queue) throw new BadRequest('queue is required');
      if (!idText || !/^\d{1,16}$/.test(idText)) throw new BadRequest('id must be a job id');
      const job = await this.store.admin().jobDetail(queue, Number(idText));
      if (!job) throw new NotFound(`Queue ${JSON.stringify(queue)} has no job ${idText}.`);
      return {
        status: 200,
        headers: {
          ...this.securityHeaders(c.ctx.nonce),
          'content-type': 'application/json; charset=utf-8',
          'content-disposition': `attachment; filename="job-${job.id}-payload.json"`,
        },
        body: JSON.stringify(job.payload, null, 2) ?? 'null',
      };
    } catch (err) {
      return this.failure(c, err);
    }
  }

  /** 404 for anything else under the mount path (reached only through the guard). */
  async notFound(req: DashboardRequest): Promise<DashboardReply> {
    const c = await this.context(req, '*');
    if (c.role === null) return this.refused(c);
    const wf = await workflowPages({
      store: this.store,
      req,
      ctx: c.ctx,
      actor: c.actor,
      csrfOk: (t) => sameOriginRequest(req.headers) && this.csrf.verify(c.nonce, t),
      onAudit: this.options.onAudit,
      reply: (s, b) => this.reply(s, b, c),
      redirect: (l) => this.redirect(l),
    }).catch((err: unknown) => this.failure(c, err));
    if (wf) return wf;
    return this.reply(404, messagePage(c.ctx, 'Not found', 'There is no such dashboard page.'), c);
  }

  /** POST /action: CSRF check, then a confirmation page, then (with confirm=yes) the action, an audit entry and a 303 back. */
  async action(req: DashboardRequest): Promise<DashboardReply> {
    const c = await this.context(req, '/action');
    if (c.role === null) return this.refused(c);
    const { ctx } = c;
    if (ctx.readOnly)
      return this.reply(
        403,
        messagePage(ctx, 'Read-only', 'This dashboard is read-only for you: actions are disabled.'),
        c,
      );
    let body: unknown;
    try {
      body = await formBody(req);
    } catch (err) {
      if (err instanceof FormTooLarge) return this.reply(413, messagePage(ctx, 'Form too large', err.message), c);
      throw err;
    }
    if (!sameOriginRequest(req.headers) || !this.csrf.verify(c.nonce, field(body, 'csrf'))) {
      return this.reply(
        403,
        messagePage(
          ctx,
          'Refused',
          'The form is stale or came from another site (CSRF check failed). Reload the page and try again.',
        ),
        c,
      );
    }
    try {
      const a = readAction(body);
      const bulk = isBulk(a.action);
      if (field(body, 'confirm') !== 'yes') {
        const matched = bulk ? await countMatching(this.store, a.filter!, bulkKind(a.action)) : 0;
        const fields = bulk ? { ...a.fields, op: newOpId(), matched: String(matched) } : a.fields;
        const back = bulk
          ? `${ctx.base}/queue?${new URLSearchParams(a.filter!.params).toString()}`
          : backTo(ctx.base, a);
        return this.reply(200, confirmPage(ctx, question(a, matched), fields, back), c);
      }
      if (bulk) return await this.startBulk(c, a, body);
      const { n, conflicts } = await runAction(this.store, a);
      await this.audit(c, a, n);
      // A created job opens its own page.
      const back =
        a.action === 'enqueue' && n > 0
          ? `${ctx.base}/job?${new URLSearchParams({ queue: a.queue!, id: String(n) }).toString()}`
          : backTo(ctx.base, a);
      const sep = back.includes('?') ? '&' : '?';
      const held =
        conflicts !== undefined && conflicts.length > 0
          ? `&c=${conflicts.length}&cids=${conflicts.slice(0, FLASH_IDS).join(',')}`
          : '';
      return this.redirect(`${back}${sep}done=${a.action}&n=${n}${held}`);
    } catch (err) {
      return this.failure(c, err);
    }
  }

  /** Waits until no bulk action of this dashboard is running (tests, shutdown). */
  idle(): Promise<void> {
    return this.bulk.idle();
  }

  private async startBulk(c: Context, a: ActionRequest, body: unknown): Promise<DashboardReply> {
    const op = field(body, 'op');
    if (!op || !/^[A-Za-z0-9_-]{8,32}$/.test(op)) throw new BadRequest('op must be the id from the confirmation form');
    const matched = Number(field(body, 'matched') ?? '0');
    const kind = bulkKind(a.action);
    const filter = a.filter!;
    const entry = (action: string, count: number, ids: readonly number[] = []): Omit<AuditEntry, 'at'> => ({
      actor: c.actor,
      role: 'admin',
      action,
      queue: filter.queue,
      schedule: null,
      jobs: ids,
      count,
      filter: `${describeFilter(filter)} (${new URLSearchParams(filter.params).toString()})`,
      op,
    });
    const started = this.bulk.start(
      op,
      kind,
      filter,
      Number.isSafeInteger(matched) ? matched : 0,
      c.ctx.now,
      async (done: BulkOp) => {
        await this.writeEntry({ ...entry(`${a.action}-${done.state}`, done.changed) });
      },
    );
    if (started.fresh) await this.writeEntry(entry(a.action, started.op.matched));
    return this.redirect(`${c.ctx.base}/bulk?${new URLSearchParams({ op: started.op.id }).toString()}`);
  }

  private async audit(c: Context, a: ActionRequest, n: number): Promise<void> {
    await this.writeEntry({
      actor: c.actor,
      role: 'admin',
      action: a.action,
      queue: a.queue ?? null,
      schedule: a.schedule ?? null,
      // A trigger resolves to the id of the job it enqueued.
      jobs:
        a.action === 'trigger' || a.action === 'enqueue'
          ? n > 0
            ? [n]
            : []
          : a.ids !== undefined
            ? a.ids
            : a.id !== undefined && n > 0
              ? [a.id]
              : [],
      count: a.action === 'trigger' || a.action === 'enqueue' ? (n > 0 ? 1 : 0) : n,
      // A limits change names the values it stored.
      filter: a.limits ? limitsText(a.limits) : null,
      op: null,
    });
  }

  private async writeEntry(e: Omit<AuditEntry, 'at'>): Promise<void> {
    const at = await this.store.now();
    await writeAudit(this.store, { ...e, at, jobs: e.jobs.slice(0, AUDIT_IDS) }, this.options.onAudit);
  }

  private async render(ctx: PageCtx, page: DashboardPage, query: unknown): Promise<string> {
    const admin = this.store.admin();
    switch (page) {
      case '': {
        const { rows, throughput } = await queueRows(this.store, ctx.now);
        return queuesPage(ctx, rows, throughput);
      }
      case 'queue': {
        const filter = readFilter(query);
        const cursor = field(query, 'cursor');
        const view = readListView(field(query, 'size'), field(query, 'sort'), field(query, 'dir'));
        const [list, rows, throughput] = await Promise.all([
          filter.filtered
            ? searchUntil(admin, filter.queue, filter.search, view.size, cursor, this.options.searchBudgetMs).then(
                (p) => ({
                  ...p,
                  scanned: p,
                }),
              )
            : admin
                .listJobs(filter.queue, { state: filter.state as JobListState, cursor, limit: view.size })
                .then((p) => ({ ...p, scanned: null })),
          queueRows(this.store, ctx.now).then((r) => r.rows),
          admin.throughput(filter.queue, ctx.now - DAY),
        ]);
        const waiting = await admin.waitingOn(list.jobs.filter((j) => j.state === 'pending').map((j) => j.id));
        return queuePage(
          ctx,
          rows.find((r) => r.name === filter.queue) ?? null,
          filter,
          list.jobs,
          list.next,
          list.scanned,
          throughput,
          waiting,
          view,
        );
      }
      case 'job': {
        const queue = field(query, 'queue');
        const idText = field(query, 'id');
        if (!queue) throw new BadRequest('queue is required');
        if (!idText || !/^\d{1,16}$/.test(idText)) throw new BadRequest('id must be a job id');
        const [job, audit, flow] = await Promise.all([
          admin.jobDetail(queue, Number(idText)),
          auditOfJob(this.store, queue, Number(idText)),
          admin.flowOf(Number(idText)),
        ]);
        if (!job)
          throw new NotFound(
            `Queue ${JSON.stringify(queue)} has no job ${idText}: it was acked, cancelled, purged, or never existed.`,
          );
        return jobPage(ctx, job, audit, field(query, 'full') === '1', flow);
      }
      case 'new':
        return newJobPage(ctx, field(query, 'queue'));
      case 'workers': {
        const node = field(query, 'node');
        const [nodes, workers, held] = await Promise.all([
          admin.nodes(),
          admin.workers(),
          node === undefined ? Promise.resolve(null) : admin.heldBy(node),
        ]);
        return workersPage(ctx, nodes, workers, node === undefined || held === null ? null : { id: node, jobs: held });
      }
      case 'receipts': {
        const outbox = field(query, 'outbox');
        if (!outbox) throw new BadRequest('outbox is required');
        const idText = field(query, 'id');
        if (idText !== undefined && !/^\d{1,16}$/.test(idText))
          throw new BadRequest('id must be a message id (digits)');
        const [page, found] = await Promise.all([
          admin.receipts(outbox, { cursor: field(query, 'cursor'), limit: 50 }),
          idText === undefined ? Promise.resolve(undefined) : this.store.outbox(outbox).receipt(Number(idText)),
        ]);
        return receiptsPage(ctx, outbox, page, found, idText);
      }
      case 'schedule': {
        const name = field(query, 'name');
        if (!name) throw new BadRequest('name (the schedule) is required');
        const s = (await this.store.listSchedules()).schedules.find((x) => x.name === name);
        if (!s) throw new NotFound(`There is no schedule ${JSON.stringify(name)}.`);
        // Bounded search calls (SEARCH_SCAN_ROWS rows each, newest first) until a page of fires or the time
        // budget; older fires are one "search further" link away.
        const page = await searchUntil(
          admin,
          s.queue,
          { header: { name: SCHEDULE_NAME_HEADER, equals: s.name } },
          FIRES,
          undefined,
          this.options.searchBudgetMs,
        );
        return schedulePage(ctx, s, page.jobs, page.next, page);
      }
      case 'dead': {
        const queue = field(query, 'queue') ?? null;
        const [{ rows }, list, oldest] = await Promise.all([
          queueRows(this.store, ctx.now),
          queue === null
            ? Promise.resolve({ jobs: [], next: null })
            : admin.listJobs(queue, { state: 'dead', cursor: field(query, 'cursor'), limit: 50 }),
          queue === null ? Promise.resolve(null) : admin.listJobs(queue, { state: 'dead', limit: DEAD_GROUP_SCAN }),
        ]);
        const groups = oldest === null ? null : groupDead(oldest.jobs, oldest.next !== null);
        return deadPage(ctx, rows, queue, list.jobs, list.next, groups);
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
        return outboxesPage(
          ctx,
          rows.filter((r) => outboxOf(r.name) !== null),
          throughput,
        );
      }
      case 'audit': {
        const beforeText = field(query, 'before');
        if (beforeText !== undefined && !/^\d{1,16}$/.test(beforeText))
          throw new BadRequest('before must be an offset');
        const { rows, next } = await readAudit(this.store, beforeText === undefined ? null : Number(beforeText), 50);
        return auditPage(ctx, rows, next);
      }
      case 'bulk': {
        const op = this.bulk.get(field(query, 'op') ?? '');
        if (!op)
          throw new NotFound(
            'No such bulk action in this process: it ran on another replica, or this process restarted (see the audit log).',
          );
        return bulkPage(ctx, op);
      }
    }
  }

  private async context(req: DashboardRequest, suffix: string): Promise<Context> {
    let nonce = readCookie(req.headers.cookie, CSRF_COOKIE);
    let cookie: string | null = null;
    // From the route's pattern and the configuration only: the request's own path is the client's to choose.
    const base = mountOf(req, suffix, this.options.path);
    if (!nonce) {
      nonce = this.csrf.newNonce();
      const secure = req.secure === true || req.protocol === 'https' || req.headers['x-forwarded-proto'] === 'https';
      cookie = `${CSRF_COOKIE}=${nonce}; Path=${base}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
    }
    const done = field(req.query, 'done') as Action | undefined;
    const n = Number(field(req.query, 'n') ?? '0');
    const c = Number(field(req.query, 'c') ?? '0');
    const cids = (field(req.query, 'cids') ?? '')
      .split(',')
      .filter((x) => /^\d{1,16}$/.test(x))
      .slice(0, FLASH_IDS)
      .map(Number);
    const redrive = done === 'redrive' || done === 'redrive-all';
    const held = redrive && Number.isSafeInteger(c) && c > 0 ? conflictText(c, cids) : '';
    const flash = done && ACTIONS.includes(done) && Number.isSafeInteger(n) ? DONE_TEXT[done](n) + held : null;
    let now = Date.now();
    try {
      now = await this.store.now();
    } catch {
      // The page itself reports the database error.
    }
    const role = this.options.readOnly
      ? (await this.options.roles?.(req)) === null
        ? null
        : 'viewer'
      : this.options.roles
        ? await this.options.roles(req)
        : 'admin';
    const actorText = role === null ? null : await this.options.actor?.(req);
    const ctx: PageCtx = {
      base,
      csrf: this.csrf.tokenFor(nonce),
      readOnly: role !== 'admin',
      now,
      flash,
      role: role ?? 'viewer',
      nonce: randomBytes(16).toString('base64'),
      liveIntervalMs: this.options.liveIntervalMs,
    };
    return {
      ctx,
      cookie,
      nonce: readCookie(req.headers.cookie, CSRF_COOKIE),
      role: role === 'admin' || role === 'viewer' ? role : null,
      actor: (typeof actorText === 'string' && actorText ? actorText : 'anonymous').slice(0, 200),
    };
  }

  private refused(c: Context): DashboardReply {
    return {
      status: 403,
      headers: { ...this.securityHeaders(c.ctx.nonce), 'content-type': 'text/plain; charset=utf-8' },
      body: 'Forbidden',
    };
  }

  private failure(c: Context, err: unknown): DashboardReply {
    if (err instanceof NotFound) return this.reply(404, messagePage(c.ctx, 'Not found', err.message), c);
    if (
      err instanceof BadRequest ||
      err instanceof BadFilter ||
      err instanceof AlkstoreError ||
      err instanceof RangeError
    ) {
      const status = err instanceof AlkstoreError && err.code === 'DATABASE' ? 503 : 400;
      return this.reply(
        status,
        messagePage(c.ctx, status === 503 ? 'Database unavailable' : 'Bad request', err.message),
        c,
      );
    }
    throw err;
  }

  private securityHeaders(nonce: string): Record<string, string> {
    return {
      'cache-control': 'no-store',
      'content-security-policy':
        `default-src 'none'; script-src 'nonce-${nonce}'; connect-src 'self'; style-src 'unsafe-inline'; ` +
        `img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'same-origin',
    };
  }

  private redirect(location: string): DashboardReply {
    return {
      status: 303,
      headers: { ...this.securityHeaders(randomBytes(16).toString('base64')), location },
      body: '',
    };
  }

  private reply(status: number, body: string, c: Context): DashboardReply {
    const headers: Record<string, string> = {
      ...this.securityHeaders(c.ctx.nonce),
      'content-type': 'text/html; charset=utf-8',
    };
    if (c.cookie) headers['set-cookie'] = c.cookie;
    return { status, headers, body };
  }
}

class NotFound extends Error {}

function bulkKind(action: Action): BulkKind {
  return action === 'bulk-retry' ? 'retry' : action === 'bulk-cancel' ? 'cancel' : 'delete';
}
