import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../../sample/app.module.js';
import { waitFor } from '../helpers/engines.js';

describe('sample GET /metrics (sqlite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'alkstore-sample-metrics-'));
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [AppModule.forRoot({ sqlitePath: join(dir, 'app.db'), idlePollIntervalMs: 200 })],
    }).compile();
    app = moduleRef.createNestApplication({ logger: ['error', 'warn'] });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the outbox dispatcher metrics in the Prometheus text format after an order is delivered', async () => {
    await request(app.getHttpServer())
      .post('/orders')
      .send({ customer: 'Ada', item: 'keyboard', quantity: 1 })
      .expect(201);
    const text = await waitFor('the delivery was counted', async () => {
      const res = await request(app.getHttpServer()).get('/metrics').expect(200);
      return /alkstore_jobs_completed_total\{queue="__alkstore_outbox:[^"]+"\} 1/.test(res.text) ? res.text : null;
    });
    expect(text).toMatch(/alkstore_jobs_claimed_total\{queue="__alkstore_outbox:[^"]+"\} 1/);
    expect(text).toContain('# TYPE alkstore_job_duration_seconds histogram');
    const res = await request(app.getHttpServer()).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
  });
});
