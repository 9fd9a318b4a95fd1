import 'reflect-metadata';
import { afterAll, beforeAll } from '@jest/globals';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication, type NestApplicationOptions, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AlkstoreDashboardModule, type AlkstoreDashboardOptions } from '../../lib/dashboard/index.js';
import { AlkstoreModule, Store } from '../../lib/nest/index.js';
import { httpApp, type HttpAdapterKind } from '../helpers/http-adapters.js';
import type { NestDb, NestEngine } from '../nest/nest-fixtures.js';

/** The header a test client sends to pass {@link TokenGuard}. */
export const TEST_TOKEN = 'let-me-in-0123456789';

/** A guard that lets a request in only with `x-admin-token: TEST_TOKEN` (or the `admin_token` cookie, for the browser). */
@Injectable()
export class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return req.headers['x-admin-token'] === TEST_TOKEN || (req.headers.cookie ?? '').split(/;\s*/).includes(`admin_token=${TEST_TOKEN}`);
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
    imports: [AlkstoreModule.forRoot(db.moduleOptions({ workers: false })), AlkstoreDashboardModule.forRoot(options)],
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
