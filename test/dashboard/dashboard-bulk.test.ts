import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { BULK_BATCH } from '../../lib/dashboard/bulk.js';
import { DashboardService } from '../../lib/dashboard/dashboard.service.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { TEST_TOKEN, TokenGuard, withDashboardApp } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

const BASE = '/ops/alkstore';

for (const engine of nestEngines()) {
  describe(`bulk action on 10,000 matching jobs [${engine.name}]`, () => {
    let app: INestApplication;
    let store: Store;
    withDashboardApp(engine, (made) => ({ app, store } = made), {
      path: '/alkstore',
      guard: TokenGuard,
      actor: () => 'ops-erin',
    });

    it('deletes every matching job in bounded batches, leaves the rest, and names it in the audit log', async () => {
      const queue = `bulk-10k-${engine.kind}`;
      const q = store.queue(queue);
      for (let i = 0; i < 10; i++)
        await q.enqueueMany(Array.from({ length: 1000 }, (_, k) => ({ tenant: 'acme', n: i * 1000 + k })));
      const keep = await q.enqueueMany(Array.from({ length: 500 }, (_, k) => ({ tenant: 'globex', n: k })));
      const page = await request(app.getHttpServer()).get(`${BASE}/dead`).set('x-admin-token', TEST_TOKEN).expect(200);
      const cookie = ([] as string[]).concat(page.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
      const token = /<meta name="csrf-token" content="([^"]+)"\s*\/?>/.exec(page.text)![1]!;
      const post = (fields: Record<string, string>) =>
        request(app.getHttpServer())
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .type('form')
          .send({ csrf: token, ...fields });
      const filter = { action: 'bulk-delete', name: queue, state: 'all', payload: 'tenant = "acme"' };
      const confirm = await post(filter).expect(200);
      expect(confirm.text).toContain('Delete 10000 jobs of queue');
      const op = /name="op" value="([^"]+)"/.exec(confirm.text)![1]!;
      const started = Date.now();
      const done = await post({ ...filter, op, matched: '10000', confirm: 'yes' }).expect(303);
      // The press came back at once; the work runs in the background.
      await app.get(DashboardService, { strict: false }).idle();
      const ms = Date.now() - started;
      const progress = await request(app.getHttpServer())
        .get(done.headers.location as string)
        .set('x-admin-token', TEST_TOKEN)
        .expect(200);
      expect(progress.text).toContain('data-state="done"');
      expect(progress.text).toContain('<b id="bulk-changed">10000</b>');
      expect(progress.text.replace(/\s+/g, ' ')).toContain(`in ${10_000 / BULK_BATCH} batches`);
      expect(await q.stats()).toMatchObject({ pending: 500 });
      expect((await store.admin().listJobs(queue, { state: 'all', limit: 1000 })).jobs.map((j) => j.id)).toEqual(keep);
      // Pressed again after it ended: nothing left to match.
      await post({ ...filter, op, matched: '10000', confirm: 'yes' }).expect(303);
      const log = (await store.admin().auditLog().readSince(0, 100)).map((e) => e.payload as Record<string, unknown>);
      expect(log.filter((e) => e.op === op).map((e) => [e.action, e.count, e.actor])).toEqual([
        ['bulk-delete', 10_000, 'ops-erin'],
        ['bulk-delete-done', 10_000, 'ops-erin'],
      ]);
      expect(log.find((e) => e.op === op)?.filter).toContain('payload tenant = "acme"');
      process.stdout.write(`bulk delete of 10,000 jobs [${engine.name}]: ${ms} ms\n`);
    }, 180_000);
  });
}
