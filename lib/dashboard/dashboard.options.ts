import type { CanActivate, Type } from '@nestjs/common';
import { InvalidOption } from '../contract/errors.js';

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
   * No actions (no redrive, purge, cancel, pause, trigger). Without a guard,
   * the pages (GET) are open to anyone who can reach the app and every other
   * request is refused: choose it only behind your own network rule.
   */
  readOnly?: boolean;
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
}

const PATH = /^\/?[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*\/?$/;

function isGuard(g: unknown): g is Type<CanActivate> | CanActivate {
  if (typeof g === 'function') return typeof (g.prototype as { canActivate?: unknown } | undefined)?.canActivate === 'function';
  return typeof g === 'object' && g !== null && typeof (g as { canActivate?: unknown }).canActivate === 'function';
}

/**
 * Validates the options. Refuses to build a dashboard without an explicit
 * access rule: a guard, or `readOnly: true`.
 */
export function resolveDashboardOptions(options: AlkstoreDashboardOptions | undefined): ResolvedDashboardOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidOption('AlkstoreDashboardModule options', 'are required: pass { guard } (a Nest guard deciding who may see and act) or { readOnly: true }');
  }
  const path = options.path ?? '/alkstore';
  if (typeof path !== 'string' || !PATH.test(path) || path.split('/').some((seg) => seg === '.' || seg === '..')) {
    throw new InvalidOption('path', `must be a URL path like "/alkstore" (letters, digits, . _ ~ - and /), got ${JSON.stringify(path)}`);
  }
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean') throw new InvalidOption('readOnly', 'must be a boolean');
  if (options.guard !== undefined && !isGuard(options.guard)) {
    throw new InvalidOption('guard', 'must be a Nest guard: a class or an object with canActivate(context)');
  }
  if (options.guard === undefined && options.readOnly !== true) {
    throw new InvalidOption(
      'guard',
      'is required: the dashboard can redrive, purge and cancel jobs, so it refuses to start without an access rule. Pass { guard: YourAuthGuard } or { readOnly: true }',
    );
  }
  if (options.csrfSecret !== undefined && (typeof options.csrfSecret !== 'string' || options.csrfSecret.length < 16)) {
    throw new InvalidOption('csrfSecret', 'must be a string of at least 16 characters');
  }
  return {
    path: `/${path.replace(/^\/+|\/+$/g, '')}`,
    guard: options.guard ?? null,
    readOnly: options.readOnly === true,
    csrfSecret: options.csrfSecret,
  };
}
