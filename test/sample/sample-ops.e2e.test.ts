import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../../sample/app.module.js';
import type { SampleConfig } from '../../sample/config.js';
import { describePg, PG_URL, waitFor } from '../helpers/engines.js';

const TOKEN = 'sample-dashboard-token-123';
const basic = (password: string) => `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;

async function sampleApp(config: SampleConfig): Promise<INestApplication> {
  const ref = await Test.createTestingModule({ imports: [AppModule.forRoot(config)] }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('sample operations: dashboard behind a token, GET /health (sqlite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-sample-ops-'));
  let app: INestApplication;
  beforeAll(async () => {
    app = await sampleApp({ sqlitePath: join(dir, 'app.db'), dashboardToken: TOKEN });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('asks for the token (HTTP Basic) and shows the dashboard with it', async () => {
    const http = request(app.getHttpServer());
    const anonymous = await http.get('/alkstore/').expect(401);
    expect(anonymous.headers['www-authenticate']).toMatch(/^Basic realm=/);
    await http.get('/alkstore/dead').set('authorization', basic('wrong-token-wrong-token')).expect(401);
    const page = await http.get('/alkstore/').set('authorization', basic(TOKEN)).expect(200);
    expect(page.text).toContain('<h1>Queues</h1>');
  });

  it('reports healthy on GET /health', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body).toMatchObject({ status: 'ok', details: { alkstore: { status: 'up', database: 'up' } } });
  });
});

describe('sample dashboard without a token', () => {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-sample-ops-'));
  let app: INestApplication;
  beforeAll(async () => {
    app = await sampleApp({ sqlitePath: join(dir, 'app.db') });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('stays locked', async () => {
    const res = await request(app.getHttpServer()).get('/alkstore/').set('authorization', basic('')).expect(401);
    expect(res.text).toContain('ALKSTORE_DASHBOARD_TOKEN');
  });
});

describePg('sample GET /health when PostgreSQL goes away', () => {
  const dbName = `sample_health_${process.pid}`;
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
    await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    await admin(`CREATE DATABASE ${dbName}`);
    app = await sampleApp({ sqlitePath: '/nonexistent', databaseUrl: PG_URL.replace(/\/[^/]*$/, `/${dbName}`) });
  }, 60_000);
  afterAll(async () => {
    await app?.close().catch(() => undefined);
    await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  }, 60_000);

  it('turns 503 once the database is dropped', async () => {
    await request(app.getHttpServer()).get('/health').expect(200);
    await admin(`DROP DATABASE ${dbName} WITH (FORCE)`);
    const res = await waitFor('an unhealthy answer', async () => {
      const r = await request(app.getHttpServer()).get('/health');
      return r.status === 503 ? r : null;
    });
    expect((res.body as { error: { alkstore: { database: string } } }).error.alkstore.database).toBe('down');
  });
});
