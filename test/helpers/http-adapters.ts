import type { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { TestingModule } from '@nestjs/testing';

/** The Nest HTTP adapters alkstore's HTTP-facing modules are tested on. */
export type HttpAdapterKind = 'express' | 'fastify';

export const HTTP_ADAPTERS: readonly HttpAdapterKind[] = ['express', 'fastify'];

/**
 * A Nest application over `kind`, initialised and ready for supertest: Fastify
 * only accepts requests on `app.getHttpServer()` once its instance is ready.
 * `configure` runs before `init()` (global prefix, plugins).
 */
export async function httpApp(
  moduleRef: TestingModule,
  kind: HttpAdapterKind,
  options: NestApplicationOptions = {},
  configure: (app: INestApplication) => void | Promise<void> = () => {},
): Promise<INestApplication> {
  const app =
    kind === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), options)
      : moduleRef.createNestApplication(options);
  try {
    await configure(app);
    await app.init();
    if (kind === 'fastify') await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
    return app;
  } catch (err) {
    // A half-started app still holds the store's connections: close it so the test run can end.
    await app.close().catch(() => {});
    throw err;
  }
}
