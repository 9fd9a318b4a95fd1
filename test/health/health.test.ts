import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AlkstoreHealthIndicator, AlkstoreHealthModule } from '../../lib/health/index.js';
import { AlkstoreModule, type AlkstoreModuleOptions } from '../../lib/nest/index.js';
import { describePg, PG_URL, waitFor } from '../helpers/engines.js';
import { HTTP_ADAPTERS, httpApp, type HttpAdapterKind } from '../helpers/http-adapters.js';
import { nestEngines, type NestDb } from '../nest/nest-fixtures.js';
import { InvalidName } from '../../lib/contract/errors.js';
import { expectInvalidArgument, refusal } from '../helpers/typed-errors.js';
import { Store } from '../../lib/index.js';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly alkstore: AlkstoreHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () =>
        this.alkstore.isHealthy('alkstore', {
          timeoutMs: 2_000,
          queues: { mail: { maxDead: 1, maxOldestReadyAgeMs: 3_600_000 } },
        }),
    ]);
  }
}

async function healthApp(
  options: AlkstoreModuleOptions,
  adapter: HttpAdapterKind = 'express',
): Promise<INestApplication> {
  @Module({
    imports: [
      AlkstoreModule.forRoot({ workers: 'off', ...options }),
      TerminusModule.forRoot({ logger: false }),
      AlkstoreHealthModule,
    ],
    controllers: [HealthController],
  })
  class HealthAppModule {}
  const ref = await Test.createTestingModule({ imports: [HealthAppModule] }).compile();
  return httpApp(ref, adapter, { logger: false });
}

interface Details {
  status: string;
  details: {
    alkstore: {
      status: string;
      database: string;
      listener: string;
      schedulerLeader: string | null;
      problems: string[];
      queues: Record<string, { dead: number; ok: boolean }>;
    };
  };
}

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`terminus health indicator [${engine.name}, ${adapter}]`, () => {
      let db: NestDb;
      let app: INestApplication;
      beforeAll(async () => {
        db = await engine.create();
        app = await healthApp(db.moduleOptions(), adapter);
      }, 60_000);
      afterAll(async () => {
        await app?.close();
        await db?.destroy();
      }, 60_000);

      it('is up with the database reachable, and reports LISTEN and the scheduler leader', async () => {
        const res = await request(app.getHttpServer()).get('/health').expect(200);
        const body = res.body as Details;
        expect(body.status).toBe('ok');
        expect(body.details.alkstore).toMatchObject({
          status: 'up',
          database: 'up',
          listener: engine.kind === 'postgres' ? 'connected' : 'none',
          schedulerLeader: null,
        });
        const store = app.get(Store);
        const ac = new AbortController();
        const running = store.runSchedules(ac.signal, { owner: 'replica-a' });
        await waitFor('leadership', () => store.admin().lock('__alkstore_scheduler'));
        const led = (await request(app.getHttpServer()).get('/health').expect(200)).body as Details;
        expect(led.details.alkstore.schedulerLeader).toBe('replica-a');
        ac.abort();
        await running;
      });

      it('turns down when a queue passes its dead-letter threshold', async () => {
        const store = app.get(Store);
        const q = store.queue('mail', { maxAttempts: 1 });
        await q.enqueueMany([1, 2]);
        for (const j of await q.claimBatch(2, 'w')) await j.fail('bounced');
        const res = await request(app.getHttpServer()).get('/health').expect(503);
        const body = res.body as { error: Details['details'] };
        expect(body.error.alkstore.status).toBe('down');
        expect(body.error.alkstore.queues.mail).toMatchObject({ dead: 2, ok: false });
        expect(body.error.alkstore.problems.join('\n')).toContain('2 dead letters (limit 1)');
        await store.admin().purgeAllDead('mail');
        await request(app.getHttpServer()).get('/health').expect(200);
      });

      it('refuses bad options with an InvalidArgument naming the option, before asking the database anything', async () => {
        const store = app.get(Store);
        // The real store behind a proxy that records every method the indicator reaches for.
        const touched: string[] = [];
        const watched = new Proxy(store, {
          get(target, prop, receiver) {
            const v: unknown = Reflect.get(target, prop, receiver);
            if (typeof v !== 'function') return v;
            return (...args: unknown[]) => {
              touched.push(String(prop));
              return (v as (...a: unknown[]) => unknown).apply(target, args);
            };
          },
        });
        const indicator = new AlkstoreHealthIndicator(watched);
        const cases: [unknown, unknown, string, string[]][] = [
          ['alkstore', { timeoutMs: 0 }, 'timeoutMs', ['[1, 2147483647]']],
          ['alkstore', { timeoutMs: 2_147_483_648 }, 'timeoutMs', ['[1, 2147483647]']],
          ['alkstore', { timeoutMs: 1.5 }, 'timeoutMs', ['fraction']],
          ['alkstore', { timeoutMs: '3000' }, 'timeoutMs', ['string']],
          ['alkstore', { timeoutMs: Number.NaN }, 'timeoutMs', ['NaN']],
          ['alkstore', { requireListener: 'yes' }, 'requireListener', ['boolean']],
          ['alkstore', { requireLeader: 1 }, 'requireLeader', ['boolean']],
          ['alkstore', { queues: ['mail'] }, 'queues', ['object']],
          ['alkstore', { queues: { mail: 5 } }, 'queues["mail"]', ['object']],
          ['alkstore', { queues: { mail: { maxDead: -1 } } }, 'queues["mail"].maxDead', ['[0, ']],
          ['alkstore', { queues: { mail: { maxDead: Number.NaN } } }, 'queues["mail"].maxDead', ['NaN']],
          [
            'alkstore',
            { queues: { mail: { maxOldestReadyAgeMs: '60s' } } },
            'queues["mail"].maxOldestReadyAgeMs',
            ['string'],
          ],
          ['alkstore', null, 'health options', ['null']],
          ['', {}, 'key', ['non-empty']],
          [42, {}, 'key', ['number']],
        ];
        for (const [key, options, argument, words] of cases) {
          const e = expectInvalidArgument(
            await refusal(() => indicator.isHealthy(key as never, options as never)),
            argument,
            words,
          );
          expect(e.message).not.toContain('60s');
        }
        await expect(indicator.isHealthy('alkstore', { queues: { '': { maxDead: 1 } } })).rejects.toBeInstanceOf(
          InvalidName,
        );
        expect(touched).toEqual([]);
        // The bounds themselves are accepted (and then the store is asked).
        const ok = await indicator.isHealthy('alkstore', {
          timeoutMs: 2_147_483_647,
          requireListener: false,
          queues: { mail: { maxDead: 0, maxOldestReadyAgeMs: 0 } },
        });
        expect(ok.alkstore.queues.mail).toBeDefined();
        expect(touched).toContain('now');
      });
    });
  }

describePg('terminus health indicator when PostgreSQL goes away', () => {
  const dbName = `ops_health_${process.pid}`;
  let app: INestApplication;
  const admin = async (sql: string) => {
    const pg = (await import('pg')).default;
    const c = new pg.Client({ connectionString: PG_URL });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  beforeAll(async () => {
    await admin(`DROP DATABASE IF EXISTS ${dbName}`);
    await admin(`CREATE DATABASE ${dbName}`);
    app = await healthApp({ url: PG_URL.replace(/\/[^/]*$/, `/${dbName}`), poolSize: 2 });
  }, 60_000);
  afterAll(async () => {
    await app?.close().catch(() => undefined);
    await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  }, 60_000);

  it('answers 503 with the database down once the database is dropped', async () => {
    await request(app.getHttpServer()).get('/health').expect(200);
    await admin(`DROP DATABASE ${dbName} WITH (FORCE)`);
    const res = await waitFor('an unhealthy answer', async () => {
      const r = await request(app.getHttpServer()).get('/health');
      return r.status === 503 ? r : null;
    });
    const body = res.body as { error: Details['details'] };
    expect(body.error.alkstore).toMatchObject({ status: 'down', database: 'down' });
    expect(body.error.alkstore.problems[0]).toMatch(/database unreachable/);
  });
});
