import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TOKEN_CHALLENGE, tokenUser } from './token-auth.js';
import type { Store } from '../contract/types.js';
import { resolveDashboardOptions } from './dashboard.options.js';
import {
  DASHBOARD_PAGES,
  DashboardService,
  type DashboardPage,
  type DashboardReply,
  type DashboardRequest,
} from './dashboard.service.js';
import { parseForm } from './form-body.js';

/** Options of {@link serveDashboard}. */
export interface StandaloneDashboardOptions {
  /** Operators sign in with this token (HTTP Basic password, any user name, or `Authorization: Bearer`). At least 16 characters. */
  token: string;
  /** Default 4000; 0 picks a free port. */
  port?: number;
  /** Default `127.0.0.1`: only this machine. */
  host?: string;
  /** Where the pages live, default `/alkstore`; `/` redirects there. */
  path?: string;
  /** Everyone signed in is a viewer: no actions. */
  readOnly?: boolean;
  /** Live refresh interval of open pages (ms). */
  liveIntervalMs?: number;
}

/** A running standalone dashboard. */
export interface StandaloneDashboard {
  /** e.g. `http://127.0.0.1:4000/alkstore`. */
  readonly url: string;
  readonly server: Server;
  /** Stops accepting requests, waits for bulk actions, closes connections. Does not close the store. */
  close(): Promise<void>;
}

function send(res: ServerResponse, reply: DashboardReply): void {
  res.writeHead(reply.status, reply.headers);
  res.end(reply.body);
}

/**
 * The dashboard's pages on a plain Node HTTP server, no Nest application:
 * what `alkstore dashboard --url … --token-env VAR` runs. Same pages, CSRF,
 * confirmations, audit log and CSP as the module; access is the token.
 */
export async function serveDashboard(store: Store, options: StandaloneDashboardOptions): Promise<StandaloneDashboard> {
  const token = options.token;
  const resolved = resolveDashboardOptions({
    path: options.path ?? '/alkstore',
    roles: (req) => {
      const r = req as IncomingMessage & { alkstoreUser?: string | null };
      return r.alkstoreUser ? (options.readOnly ? 'viewer' : 'admin') : null;
    },
    actor: (req) => (req as { alkstoreUser?: string | null }).alkstoreUser ?? null,
    liveIntervalMs: options.liveIntervalMs,
  });
  const dashboard = new DashboardService(store, resolved);
  const mount = resolved.path;
  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const user = tokenUser(req.headers.authorization, token);
      if (user === null) {
        res.writeHead(401, {
          'www-authenticate': TOKEN_CHALLENGE,
          'content-type': 'text/plain; charset=utf-8',
          'cache-control': 'no-store',
        });
        res.end('Sign in with the dashboard token (any user name).');
        return;
      }
      if (url.pathname === '/' && mount !== '/') {
        res.writeHead(302, { location: mount });
        res.end();
        return;
      }
      const request = Object.assign(req, {
        query: parseForm(url.search.slice(1)),
        alkstoreUser: user,
      }) as unknown as DashboardRequest;
      const rest =
        url.pathname === mount
          ? ''
          : url.pathname.startsWith(`${mount}/`)
            ? url.pathname.slice(mount.length + 1)
            : null;
      if (rest === null) {
        res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
        res.end('Not found');
      } else if (req.method === 'POST' && rest === 'action') send(res, await dashboard.action(request));
      else if (req.method === 'POST' && rest === 'workflow-action')
        send(res, await dashboard.notFound(request)); // the workflow pages (workflow-pages.ts)
      else if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, POST', 'content-type': 'text/plain; charset=utf-8' });
        res.end('Method not allowed');
      } else if (rest === '') send(res, await dashboard.page(request, ''));
      else if (rest === 'payload') send(res, await dashboard.payload(request));
      else if ((DASHBOARD_PAGES as readonly string[]).includes(rest))
        send(res, await dashboard.page(request, rest as DashboardPage));
      else send(res, await dashboard.notFound(request));
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`Internal error: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4000, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${mount}`,
    server,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await dashboard.idle();
    },
  };
}
