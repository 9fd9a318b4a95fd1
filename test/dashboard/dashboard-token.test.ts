import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { InvalidOption } from '../../lib/contract/errors.js';
import { AlkstoreDashboardModule, type AuditEntry } from '../../lib/dashboard/index.js';
import type { Store } from '../../lib/index.js';
import { HTTP_ADAPTERS } from '../helpers/http-adapters.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { BASE, withDashboardApp } from './dashboard-app.js';

const TOKEN = 'dashboard-token-0123456789';
process.env.ALKSTORE_TEST_DASHBOARD_TOKEN = TOKEN;
process.env.ALKSTORE_TEST_SHORT_TOKEN = 'short';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('AlkstoreDashboardModule tokenEnv: bad input', () => {
  it('refuses an unset or short token, a bad variable name, and tokenEnv with a guard, naming tokenEnv', () => {
    for (const options of [
      { tokenEnv: 'ALKSTORE_TEST_UNSET_TOKEN' },
      { tokenEnv: 'ALKSTORE_TEST_SHORT_TOKEN' },
      { tokenEnv: 'not a name' },
      { tokenEnv: 'ALKSTORE_TEST_DASHBOARD_TOKEN', guard: { canActivate: () => true } },
    ]) {
      let err: unknown;
      try {
        AlkstoreDashboardModule.forRoot(options);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(InvalidOption);
      expect((err as Error).message).toMatch(/^option tokenEnv /);
    }
  });
});

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS)
    describe(`AlkstoreDashboardModule tokenEnv [${engine.name}, ${adapter}]`, () => {
      let app: INestApplication;
      let store: Store;
      const audited: AuditEntry[] = [];
      withDashboardApp(
        engine,
        (made) => ({ app, store } = made),
        { path: '/alkstore', tokenEnv: 'ALKSTORE_TEST_DASHBOARD_TOKEN', onAudit: (e) => audited.push(e) },
        adapter,
      );

      it('checks the token itself: Basic with any user name or Bearer; 401 with the challenge otherwise', async () => {
        const server = () => app.getHttpServer();
        const refused = await request(server()).get(BASE).expect(401);
        expect(refused.headers['www-authenticate']).toBe('Basic realm="alkstore", charset="UTF-8"');
        await request(server()).get(BASE).set('authorization', basic('erin', 'wrong-token-0123456789')).expect(401);
        await request(server()).get(`${BASE}/queue?name=x`).set('authorization', 'Bearer nope').expect(401);
        await request(server()).get(BASE).set('authorization', `Bearer ${TOKEN}`).expect(200);
        // An action signed in with Basic is audited under its user name.
        const queue = `token-${engine.kind}-${adapter}`;
        await store.schedule(queue, '@every 1d', queue, {});
        const page = await request(server()).get(`${BASE}/dead`).set('authorization', basic('erin', TOKEN)).expect(200);
        const cookie = ([] as string[]).concat(page.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
        const csrf = /<meta name="csrf-token" content="([^"]+)"/.exec(page.text)![1]!;
        await request(server())
          .post(`${BASE}/action`)
          .set('authorization', basic('erin', TOKEN))
          .set('cookie', cookie)
          .type('form')
          .send({ csrf, action: 'trigger', schedule: queue, confirm: 'yes' })
          .expect(303);
        expect(audited).toContainEqual(expect.objectContaining({ action: 'trigger', schedule: queue, actor: 'erin' }));
        // Cross-site (Origin: null) is still refused.
        await request(server())
          .post(`${BASE}/action`)
          .set('authorization', basic('erin', TOKEN))
          .set('cookie', cookie)
          .set('origin', 'null')
          .type('form')
          .send({ csrf, action: 'trigger', schedule: queue, confirm: 'yes' })
          .expect(403);
      });
    });
