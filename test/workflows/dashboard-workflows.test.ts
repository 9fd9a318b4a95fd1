import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { AuditEntry } from '../../lib/dashboard/index.js';
import { createWorkflows, defineWorkflow } from '../../lib/workflows/index.js';
import { workflowSqlOf } from '../../lib/workflows/sql-seam.js';
import type { Store as PlainStore } from '../../lib/contract/types.js';
import { serveDashboard, type StandaloneDashboard } from '../../lib/dashboard/standalone.js';
import { contractEngines, waitFor, type EngineDb } from '../helpers/engines.js';
import { HTTP_ADAPTERS } from '../helpers/http-adapters.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { actorOf, BASE, csrfOf, roleOf, TEST_TOKEN, TokenGuard, withDashboardApp } from '../dashboard/dashboard-app.js';
import { type Store } from '../../lib/index.js';

const XSS = '<script>window.__owned = 1</script>';
const STANDALONE_TOKEN = 'standalone-workflows-0123456789';

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`dashboard workflow pages over HTTP [${engine.name}, ${adapter}]`, () => {
      let app: INestApplication;
      let store: Store;
      const audited: AuditEntry[] = [];
      withDashboardApp(
        engine,
        (made) => ({ app, store } = made),
        { path: '/alkstore', guard: TokenGuard, roles: roleOf, actor: actorOf, onAudit: (e) => audited.push(e) },
        adapter,
      );
      const get = (path: string, headers: Record<string, string> = {}) => {
        let r = request(app.getHttpServer()).get(path).set('x-admin-token', TEST_TOKEN);
        for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
        return r;
      };
      const post = async (
        fields: Record<string, string>,
        status: number,
        headers: Record<string, string> = {},
        csrf = true,
      ) => {
        const { cookie, token } = await csrfOf(app);
        let r = request(app.getHttpServer())
          .post(`${BASE}/workflow-action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie);
        for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
        return r
          .type('form')
          .send({ ...(csrf ? { csrf: token } : {}), ...fields })
          .expect(status);
      };

      it('offers the namespace of runs that are all parked, with no job and no throughput minute of its queue', async () => {
        const ns = `dash-parked-${adapter}`;
        const parked = defineWorkflow('dash-only-parked', {
          async run(_input: null, ctx) {
            return ctx.waitForSignal('never');
          },
        });
        const w = createWorkflows(store, { workflows: [parked], namespace: ns, idlePollIntervalMs: 50 });
        try {
          await w.start(parked, null, { id: 'only-parked' });
          await waitFor('only-parked waiting', async () =>
            (await w.getStatus('only-parked'))?.steps.some((s) => s.state === 'waiting'),
          );
        } finally {
          await w.close();
        }
        await waitFor('no job of the namespace left', async () => {
          const st = await w.queue.stats();
          return st.pending + st.processing === 0;
        });
        // Its throughput minutes gone, as a day after the last pass (retention of the minutes).
        const sql = workflowSqlOf(store)!;
        const minutes = sql.dialect === 'postgres' ? `${sql.prefix}queue_minutes` : '__alkstore_queue_minutes';
        await sql.query(`DELETE FROM ${minutes} WHERE queue = $1`, [w.queue.name], true);
        expect(await store.admin().queueNames()).not.toContain(w.queue.name);
        const page = await get(`${BASE}/workflows`).expect(200);
        expect(page.text).toMatch(new RegExp(`<nav class="states" id="namespaces">[^]*>${ns}</a>`));
      });

      it('lists runs with a status filter, shows a run with its step timeline and journal, and cancels (confirmed, CSRF-checked, audited)', async () => {
        const ns = `dash-wf-${adapter}`;
        const parked = defineWorkflow('dash-parked', {
          async run(input: { note: string }, ctx) {
            await ctx.step('prepare', () => input.note);
            return ctx.waitForSignal('go');
          },
        });
        const broken = defineWorkflow('dash-broken', {
          run: async () => {
            throw new Error(`broken ${XSS}`);
          },
        });
        const w = createWorkflows(store, { workflows: [parked, broken], namespace: ns, idlePollIntervalMs: 50 });
        try {
          await w.start(parked, { note: XSS }, { id: 'run-a' });
          await w.start(broken, null, { id: 'run-b' });
          await waitFor('run-a waiting', async () =>
            (await w.getStatus('run-a'))?.steps.some((s) => s.state === 'waiting'),
          );
          await w.waitForResult('run-b', { timeoutMs: 20_000 }).catch(() => undefined);

          // Every page's header links the workflows page.
          expect((await get(`${BASE}`).expect(200)).text).toMatch(/<a href="[^"]*\/workflows"[^>]*>Workflows<\/a>/);
          const list = await get(`${BASE}/workflows?ns=${ns}`).expect(200);
          expect(list.text).toContain('data-run="run-a" data-state="running"');
          expect(list.text).toContain('data-run="run-b" data-state="failed"');
          const failed = await get(`${BASE}/workflows?ns=${ns}&state=failed`).expect(200);
          expect(failed.text).not.toContain('data-run="run-a"');
          expect(failed.text).toContain('data-run="run-b"');
          await get(`${BASE}/workflows?ns=${ns}&state=bogus`).expect(400);
          // Counts per state, what a running run waits for, a failed run's error, keyset pages.
          expect(list.text).toContain('data-count="running">1<');
          expect(list.text).toContain('data-count="failed">1<');
          expect(list.text).toContain('waiting for signal go');
          expect(list.text).toContain('Error: broken &lt;script&gt;');
          expect(list.text).not.toContain('id="older"');
          await w.start(parked, { note: 'c' }, { id: 'run-c' });
          await waitFor('run-c waiting', async () =>
            (await w.getStatus('run-c'))?.steps.some((s) => s.state === 'waiting'),
          );
          // Send signal: confirmed, CSRF-checked, audited; bad JSON refused before anything is sent.
          await post({ action: 'signal', ns, id: 'run-c', signal: 'go', data: '{bad', confirm: 'yes' }, 400);
          await post({ action: 'signal', ns, id: 'run-c', signal: 'go', data: '"ok"', confirm: 'yes' }, 403, {}, false);
          const ask = await post({ action: 'signal', ns, id: 'run-c', signal: 'go', data: '"ok"' }, 200);
          expect(ask.text).toContain('Send signal &quot;go&quot;');
          expect((await w.getStatus('run-c'))!.state).toBe('running');
          const sent = await post(
            { action: 'signal', ns, id: 'run-c', signal: 'go', data: '"ok"', confirm: 'yes' },
            303,
          );
          expect(sent.headers.location).toBe(`${BASE}/workflow?ns=${ns}&id=run-c&wf=signal&ok=1`);
          await expect(w.waitForResult('run-c', { timeoutMs: 20_000 })).resolves.toBe('ok');
          expect(audited.at(-1)).toMatchObject({ action: 'workflow-signal', count: 1, filter: 'run run-c signal go' });
          const failedRun = await get(`${BASE}/workflow?ns=${ns}&id=run-b`).expect(200);
          expect(failedRun.text).toContain('id="run-stack"');

          const page = await get(`${BASE}/workflow?ns=${ns}&id=run-a`).expect(200);
          expect(page.text).toContain('data-position="0" data-state="done"');
          expect(page.text).toContain('data-position="1" data-state="waiting"');
          expect(page.text).toContain('data-entry="start"');
          expect(page.text).not.toContain(XSS);
          expect(page.text).toContain('&lt;script&gt;');
          expect(page.text).toContain('data-action="workflow-cancel"');
          await get(`${BASE}/workflow?ns=${ns}&id=nope`).expect(404);
          // A viewer sees no action.
          expect(
            (await get(`${BASE}/workflow?ns=${ns}&id=run-a`, { 'x-role': 'viewer' }).expect(200)).text,
          ).not.toContain('data-action="workflow-cancel"');

          // No CSRF token: refused, nothing cancelled. A viewer: refused.
          await post({ action: 'cancel', ns, id: 'run-a', confirm: 'yes' }, 403, {}, false);
          await post({ action: 'cancel', ns, id: 'run-a', confirm: 'yes' }, 403, { 'x-role': 'viewer' });
          // First a confirmation page, then the action.
          const confirm = await post({ action: 'cancel', ns, id: 'run-a' }, 200);
          expect(confirm.text).toContain('Cancel workflow run run-a');
          expect((await w.getStatus('run-a'))!.state).toBe('running');
          const done = await post({ action: 'cancel', ns, id: 'run-a', confirm: 'yes' }, 303, { 'x-user': 'erin' });
          expect(done.headers.location).toBe(`${BASE}/workflow?ns=${ns}&id=run-a&wf=cancel&ok=1`);
          expect((await w.getStatus('run-a'))!.state).toBe('cancelled');
          expect(audited.at(-1)).toMatchObject({
            actor: 'erin',
            action: 'workflow-cancel',
            queue: `__alkstore_workflows:${ns}`,
            count: 1,
            filter: 'run run-a',
          });
          const after = await get(done.headers.location as string).expect(200);
          expect(after.text).toContain('Cancelled the run');

          // Retry of the failed run.
          expect((await get(`${BASE}/workflow?ns=${ns}&id=run-b`).expect(200)).text).toContain(
            'data-action="workflow-retry"',
          );
          await post({ action: 'retry', ns, id: 'run-b', confirm: 'yes' }, 303);
          expect(audited.at(-1)).toMatchObject({ action: 'workflow-retry', count: 1 });
        } finally {
          await w.close();
        }
      });
    });
  }

for (const engine of contractEngines()) {
  describe(`standalone dashboard workflow pages [${engine.name}]`, () => {
    let db: EngineDb;
    let s: PlainStore;
    let dash: StandaloneDashboard;
    beforeAll(async () => {
      db = await engine.create();
      s = await db.open();
      dash = await serveDashboard(s, { token: STANDALONE_TOKEN, port: 0 });
    }, 60_000);
    afterAll(async () => {
      await dash?.close();
      await db?.destroy();
    }, 60_000);

    it('lists a run and cancels it through the POST form', async () => {
      const wf = defineWorkflow('sa-parked', { run: async (_i: null, ctx) => ctx.waitForSignal('go') });
      const w = createWorkflows(s, { workflows: [wf], idlePollIntervalMs: 50 });
      try {
        await w.start(wf, null, { id: 'sa-run' });
        await waitFor('sa-run waiting', async () =>
          (await w.getStatus('sa-run'))?.steps.some((x) => x.state === 'waiting'),
        );
        const auth = { authorization: `Bearer ${STANDALONE_TOKEN}` };
        const list = await fetch(`${dash.url}/workflows`, { headers: auth });
        expect(list.status).toBe(200);
        const text = await list.text();
        expect(text).toContain('data-run="sa-run" data-state="running"');
        const cookie = list.headers.get('set-cookie')!.split(';')[0]!;
        const token = /<meta name="csrf-token" content="([^"]+)"\s*\/?>/.exec(text)![1]!;
        const res = await fetch(`${dash.url}/workflow-action`, {
          method: 'POST',
          redirect: 'manual',
          headers: { ...auth, cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({
            csrf: token,
            action: 'cancel',
            ns: 'alkstore.workflows',
            id: 'sa-run',
            confirm: 'yes',
          }).toString(),
        });
        expect(res.status).toBe(303);
        expect((await w.getStatus('sa-run'))!.state).toBe('cancelled');
      } finally {
        await w.close();
      }
    });
  });
}
