/** The routing facts of a request that name where the dashboard is mounted (set by the router, not the client). */
export interface RoutedRequest {
  /** Express: the matched route; its `path` is the pattern as registered (global prefix included). */
  readonly route?: { readonly path?: unknown };
  /** Express: the mount path of the router that matched. */
  readonly baseUrl?: string;
  /** Fastify: the matched route; its `url` is the pattern as registered. */
  readonly routeOptions?: { readonly url?: unknown };
}

const CATCH_ALL_TAIL = /(\/:s\d+)+$/;

/**
 * The mount path as the application routes it (global prefix included), from
 * the pattern of the route that matched: Express `req.baseUrl + req.route.path`,
 * Fastify `req.routeOptions.url`, minus the handler's own `suffix` (`/queue`,
 * or the catch-all's `/:s0/…`). Never built from the request's URL, which the
 * client chooses: a crafted path such as `/alkstore/x;Path=/;/alkstore` must
 * not reach a `Set-Cookie` header or a link. Without a route (the standalone
 * server) or with an unexpected pattern, the configured path itself.
 */
export function mountOf(req: RoutedRequest, suffix: string, configured: string): string {
  const express = typeof req.route?.path === 'string' ? `${req.baseUrl ?? ''}${req.route.path}` : undefined;
  const fastify = typeof req.routeOptions?.url === 'string' ? req.routeOptions.url : undefined;
  const pattern = express ?? fastify;
  if (pattern === undefined) return configured;
  const base =
    suffix === '*'
      ? pattern.replace(CATCH_ALL_TAIL, '')
      : pattern.endsWith(suffix)
        ? pattern.slice(0, pattern.length - suffix.length)
        : null;
  const clean = base?.replace(/\/+$/, '');
  // Only a plain path ending in the configured mount: anything else falls back to the configuration.
  if (clean === undefined || !clean.endsWith(configured) || !/^(\/[A-Za-z0-9._~-]+)+$/.test(clean)) return configured;
  return clean;
}
