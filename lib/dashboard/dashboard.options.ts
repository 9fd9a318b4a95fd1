import { DashboardTokenGuard, tokenUser } from './token-auth.js';
import type { CanActivate, Type } from '@nestjs/common';
import { InvalidOption } from '../contract/errors.js';
import type { AuditEntry } from './audit.js';

/** What a user may do on the dashboard: `admin` acts, `viewer` only reads. */
export type DashboardRole = 'admin' | 'viewer';

/**
 * Decides a request's role from the raw request (Express's or Fastify's, or
 * Node's on the standalone server): `admin`, `viewer`, or `null` to refuse it
 * (403). May be async.
 */
export type DashboardRoles = (req: unknown) => DashboardRole | null | Promise<DashboardRole | null>;

/** Options of `AlkstoreDashboardModule.forRoot`. */
export interface AlkstoreDashboardOptions {
  /** Where the dashboard is mounted, e.g. `/alkstore` (default). Relative to the app's global prefix, like any controller. */
  path?: string;
  /**
   * The access rule: a Nest guard (class or instance) that decides every
   * request under the mount path, pages and actions alike. Required unless
   * `readOnly: true`.
   */
  guard?: Type<CanActivate> | CanActivate;
  /**
   * The name of an environment variable holding an access token (at least 16 characters), read at
   * `forRoot`: the dashboard then checks every request itself, as the CLI's dashboard does (HTTP Basic
   * with any user name and the token as password, or `Authorization: Bearer <token>`), answering 401
   * otherwise. The Basic user name is the audit log's actor unless `actor` says otherwise. Not with `guard`.
   */
  tokenEnv?: string;
  /**
   * No actions (no redrive, purge, cancel, pause, trigger). Without a guard,
   * the pages (GET) are open to anyone who can reach the app and every other
   * request is refused: choose it only behind your own network rule.
   */
  readOnly?: boolean;
  /**
   * One mount for read-only and admin users: called on every request (after
   * the guard, when there is one); `viewer` sees the pages without any action,
   * `null` is refused with 403. Without it, every request the guard lets in is
   * `admin` (or `viewer` with `readOnly: true`). An access rule on its own, so
   * `guard` may be left out when it decides everyone's role.
   */
  roles?: DashboardRoles;
  /**
   * Who made a request, for the audit log (e.g. the user name your auth put on
   * the request). Default: `anonymous`. At most 200 characters are kept.
   */
  actor?: (req: unknown) => string | null | undefined | Promise<string | null | undefined>;
  /** Called with every audit entry once it is stored (an event for your own log or alerting); errors are ignored. */
  onAudit?: (entry: AuditEntry) => void;
  /** How often open pages refresh their counts and lists while the tab is visible, in ms (250..600000, default 5000). */
  liveIntervalMs?: number;
  /**
   * How long one page of a search, a queue's history or a schedule's fires keeps scanning for a
   * full page of matches, in ms (100..30000, default 1000); the page then says how far it looked.
   */
  searchBudgetMs?: number;
  /**
   * Secret that signs CSRF tokens. Default: random per process, so set the
   * same value on every replica when one browser session may hit several.
   */
  csrfSecret?: string;
}

/** Options after validation. */
export interface ResolvedDashboardOptions {
  readonly path: string;
  readonly guard: Type<CanActivate> | CanActivate | null;
  readonly readOnly: boolean;
  readonly csrfSecret: string | undefined;
  readonly roles: DashboardRoles | null;
  readonly liveIntervalMs: number;
  readonly searchBudgetMs: number;
  readonly actor: ((req: unknown) => string | null | undefined | Promise<string | null | undefined>) | null;
  readonly onAudit: ((entry: AuditEntry) => void) | null;
}

const PATH = /^\/?[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*\/?$/;

function isGuard(g: unknown): g is Type<CanActivate> | CanActivate {
  if (typeof g === 'function')
    return typeof (g.prototype as { canActivate?: unknown } | undefined)?.canActivate === 'function';
  return typeof g === 'object' && g !== null && typeof (g as { canActivate?: unknown }).canActivate === 'function';
}

/**
 * Validates the options. Refuses to build a dashboard without an explicit
 * access rule: a guard, or `readOnly: true`.
 */
export function resolveDashboardOptions(options: AlkstoreDashboardOptions | undefined): ResolvedDashboardOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidOption(
      'AlkstoreDashboardModule options',
      'are required: pass { guard } (a Nest guard deciding who may see and act) or { readOnly: true }',
    );
  }
  const path = options.path ?? '/alkstore';
  if (typeof path !== 'string' || !PATH.test(path) || path.split('/').some((seg) => seg === '.' || seg === '..')) {
    throw new InvalidOption(
      'path',
      `must be a URL path like "/alkstore" (letters, digits, . _ ~ - and /), got ${JSON.stringify(path)}`,
    );
  }
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean')
    throw new InvalidOption('readOnly', 'must be a boolean');
  if (options.guard !== undefined && !isGuard(options.guard)) {
    throw new InvalidOption('guard', 'must be a Nest guard: a class or an object with canActivate(context)');
  }
  for (const fn of ['roles', 'actor', 'onAudit'] as const) {
    if (options[fn] !== undefined && typeof options[fn] !== 'function')
      throw new InvalidOption(fn, 'must be a function');
  }
  let guard = options.guard ?? null;
  let actor = options.actor ?? null;
  if (options.tokenEnv !== undefined) {
    if (typeof options.tokenEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(options.tokenEnv))
      throw new InvalidOption('tokenEnv', 'must name an environment variable, such as "ALKSTORE_DASHBOARD_TOKEN"');
    if (options.guard !== undefined)
      throw new InvalidOption('tokenEnv', 'cannot be combined with guard: the token check is the guard');
    const token = process.env[options.tokenEnv];
    if (token === undefined || token.length < 16)
      throw new InvalidOption(
        'tokenEnv',
        `names ${options.tokenEnv}, which must hold a token of at least 16 characters (it is ${token === undefined ? 'unset' : `${token.length} characters`})`,
      );
    guard = new DashboardTokenGuard(token);
    actor ??= (req: unknown) =>
      tokenUser((req as { headers?: Record<string, string | string[] | undefined> }).headers?.authorization, token) ??
      undefined;
  }
  if (guard === null && options.readOnly !== true && options.roles === undefined) {
    throw new InvalidOption(
      'guard',
      'is required: the dashboard can redrive, purge and cancel jobs, so it refuses to start without an ' +
        'access rule. Pass { tokenEnv: "ALKSTORE_DASHBOARD_TOKEN" }, { guard: YourAuthGuard }, ' +
        '{ roles: (req) => "admin" | "viewer" | null } or { readOnly: true }',
    );
  }
  if (options.csrfSecret !== undefined && (typeof options.csrfSecret !== 'string' || options.csrfSecret.length < 16)) {
    throw new InvalidOption('csrfSecret', 'must be a string of at least 16 characters');
  }
  const live = options.liveIntervalMs ?? 5000;
  if (typeof live !== 'number' || !Number.isInteger(live) || live < 250 || live > 600_000)
    throw new InvalidOption('liveIntervalMs', 'must be an integer number of ms in [250, 600000]');
  const budget = options.searchBudgetMs ?? 1000;
  if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 100 || budget > 30_000)
    throw new InvalidOption('searchBudgetMs', 'must be an integer number of ms in [100, 30000]');
  return {
    liveIntervalMs: live,
    searchBudgetMs: budget,
    path: `/${path.replace(/^\/+|\/+$/g, '')}`,
    guard,
    readOnly: options.readOnly === true,
    csrfSecret: options.csrfSecret,
    roles: options.roles ?? null,
    actor,
    onAudit: options.onAudit ?? null,
  };
}
