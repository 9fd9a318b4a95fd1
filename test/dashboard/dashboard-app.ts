import 'reflect-metadata';
import { afterAll, beforeAll } from '@jest/globals';
import {
  Injectable,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  type NestApplicationOptions,
  type Type,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AlkstoreDashboardModule, type AlkstoreDashboardOptions } from '../../lib/dashboard/index.js';
import { AlkstoreModule } from '../../lib/nest/index.js';
import { httpApp, type HttpAdapterKind } from '../helpers/http-adapters.js';
import type { NestDb, NestEngine } from '../nest/nest-fixtures.js';
import { Store } from '../../lib/index.js';

/** The header a test client sends to pass {@link TokenGuard}. */
export const TEST_TOKEN = 'let-me-in-0123456789';

/** A guard that lets a request in only with `x-admin-token: TEST_TOKEN` (or the `admin_token` cookie, for the browser). */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return (
      req.headers['x-admin-token'] === TEST_TOKEN ||
      (req.headers.cookie ?? '').split(/;\s*/).includes(`admin_token=${TEST_TOKEN}`)
    );
  }
}

/** A live Nest app (no workers) over `adapter` with the dashboard mounted at /ops/alkstore, next to the app's own `controllers`. */
export async function dashboardApp(
  db: NestDb,
  options: AlkstoreDashboardOptions = { path: '/alkstore', guard: TokenGuard },
  adapter: HttpAdapterKind = 'express',
  appOptions: NestApplicationOptions = {},
  controllers: Type[] = [],
): Promise<{ app: INestApplication; store: Store }> {
  const moduleRef = await Test.createTestingModule({
    imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: 'off' })), AlkstoreDashboardModule.forRoot(options)],
    controllers,
  }).compile();
  const app = await httpApp(moduleRef, adapter, { logger: ['error', 'warn'], ...appOptions }, (a) => {
    a.setGlobalPrefix('ops');
  });
  return { app, store: app.get(Store) };
}

/** One dashboard app and its database for the enclosing describe: made before its tests (handed to `use`), closed after them. */
export function withDashboardApp(
  engine: NestEngine,
  use: (made: { app: INestApplication; store: Store }) => void,
  ...args: Parameters<typeof dashboardApp> extends [NestDb, ...infer Rest] ? Rest : never
): void {
  let db: NestDb | undefined;
  let app: INestApplication | undefined;
  beforeAll(async () => {
    db = await engine.create();
    const made = await dashboardApp(db, ...args);
    app = made.app;
    use(made);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.destroy();
  }, 60_000);
}

/** Where {@link dashboardApp} mounts the dashboard (global prefix `ops`). */
export const BASE = '/ops/alkstore';

/** Roles from a header, so one app serves admins, viewers and strangers. */
export function roleOf(req: unknown): 'admin' | 'viewer' | null {
  const role = (req as { headers: Record<string, string | undefined> }).headers['x-role'];
  return role === 'admin' || role === 'viewer' ? role : role === undefined ? 'admin' : null;
}
export function actorOf(req: unknown): string | undefined {
  return (req as { headers: Record<string, string | undefined> }).headers['x-user'];
}

/** A fresh CSRF cookie and form token from a page load. */
export async function csrfOf(app: INestApplication): Promise<{ cookie: string; token: string }> {
  const res = await request(app.getHttpServer()).get(`${BASE}/dead`).set('x-admin-token', TEST_TOKEN).expect(200);
  const cookie = ([] as string[])
    .concat(res.headers['set-cookie'] ?? [])
    .find((c) => c.startsWith('alkstore_csrf='))!
    .split(';')[0]!;
  const token = /<meta name="csrf-token" content="([^"]+)"\s*\/?>/.exec(res.text)![1]!;
  return { cookie, token };
}

/** GETs past the guard, and action POSTs with a fresh CSRF cookie and token, on the app `app()` returns. */
export function dashboardClient(app: () => INestApplication) {
  const get = (path: string, headers: Record<string, string> = {}) => {
    let r = request(app().getHttpServer()).get(path).set('x-admin-token', TEST_TOKEN);
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    return r;
  };
  const post = async (
    fields: Record<string, string>,
    status: number,
    headers: Record<string, string> = {},
  ): Promise<request.Response> => {
    const { cookie, token } = await csrfOf(app());
    let r = request(app().getHttpServer())
      .post(`${BASE}/action`)
      .set('x-admin-token', TEST_TOKEN)
      .set('cookie', cookie);
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    return r
      .type('form')
      .send({ csrf: token, ...fields })
      .expect(status);
  };
  return { get, post };
}

/** The ids of the job rows (`data-job`) of a page, in page order. */
export function jobIdsOf(text: string): number[] {
  return [...text.matchAll(/data-job="(\d+)"/g)].map((m) => Number(m[1]));
}
