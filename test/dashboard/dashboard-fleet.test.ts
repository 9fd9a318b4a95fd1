import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import type { AuditEntry } from '../../lib/dashboard/index.js';
import { waitFor } from '../helpers/engines.js';
import { HTTP_ADAPTERS } from '../helpers/http-adapters.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { actorOf, BASE, dashboardClient, jobIdsOf, roleOf, TokenGuard, withDashboardApp } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

const XSS = '<script>window.__owned = 1</script>';

function unescape(href: string): string {
  return href.replace(/&amp;/g, '&');
}

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`dashboard job history, job editor, workers, receipts and schedule fires over HTTP [${engine.name}, ${adapter}]`, () => {
      let app: INestApplication;
      let store: Store;
      const audited: AuditEntry[] = [];
      withDashboardApp(
        engine,
        (made) => ({ app, store } = made),
        { path: '/alkstore', guard: TokenGuard, roles: roleOf, actor: actorOf, onAudit: (e) => audited.push(e) },
        adapter,
      );
      const { get, post } = dashboardClient(() => app);

      it('lists finished jobs (the history) newest first, filterable, escaped', async () => {
        const queue = `history-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        const ids = await q.enqueueMany([{ n: 1, html: XSS }, { n: 2 }, { n: 3 }]);
        for (const id of ids.slice(0, 2)) {
          const j = await waitFor('a claim', () => q.claimOne('w'));
          expect(j.id).toBe(id);
          await j.fail(new Error(`failed ${j.id} ${XSS}`));
        }
        const page = await get(`${BASE}/queue?name=${queue}&state=finished`).expect(200);
        expect(jobIdsOf(page.text)).toEqual([ids[1], ids[0]]);
        expect(page.text).toContain('history (finished)');
        expect(page.text).not.toContain(XSS);
        expect(page.text).toContain('&lt;script&gt;');
        const filtered = await get(
          `${BASE}/queue?name=${queue}&state=finished&error=${encodeURIComponent(`failed ${ids[0]} `)}`,
        ).expect(200);
        expect(jobIdsOf(filtered.text)).toEqual([ids[0]]);
        // Pending jobs are not history.
        expect(jobIdsOf(page.text)).not.toContain(ids[2]);
      });

      it('creates a job from the form after a confirmation, opens it, audits it; bad JSON is named and writes nothing', async () => {
        const queue = `create-${engine.kind}`;
        const form = await get(`${BASE}/new?queue=${queue}`).expect(200);
        expect(form.text).toContain('name="payload"');
        expect(form.text).toContain(`value="${queue}"`);
        const payload = JSON.stringify({ orderId: 7, note: XSS });
        const confirm = await post(
          { action: 'enqueue', queue, payload, priority: '4', runAt: '2999-01-01T00:00:00' },
          200,
        );
        expect(confirm.text).toContain('Enqueue a job on queue');
        expect(confirm.text).toContain('2999-01-01T00:00:00.000Z');
        expect(confirm.text).not.toContain(XSS);
        expect((await store.queue(queue).stats()).pending).toBe(0);
        const done = await post(
          { action: 'enqueue', queue, payload, priority: '4', runAt: '2999-01-01T00:00:00', confirm: 'yes' },
          303,
          { 'x-user': 'erin' },
        );
        const location = done.headers.location as string;
        const id = Number(/[?&]id=(\d+)/.exec(location)![1]);
        expect(location).toBe(`${BASE}/job?queue=${queue}&id=${id}&done=enqueue&n=${id}`);
        const job = await store.queue(queue).getJob(id);
        expect(job).toMatchObject({
          state: 'pending',
          priority: 4,
          runAt: Date.parse('2999-01-01T00:00:00Z'),
          payload: { orderId: 7, note: XSS },
        });
        const shown = await get(unescape(location)).expect(200);
        expect(shown.text).toContain(`Enqueued job ${id}.`);
        expect(audited).toContainEqual(
          expect.objectContaining({ action: 'enqueue', queue, jobs: [id], count: 1, actor: 'erin' }),
        );
        const bad = await post({ action: 'enqueue', queue, payload: '{orderId: 7', confirm: 'yes' }, 400);
        expect(bad.text).toContain('payload must be JSON');
        await post({ action: 'enqueue', queue, payload: '{}', priority: '1.5', confirm: 'yes' }, 400);
        expect((await store.queue(queue).stats()).pending).toBe(1);
      });

      it('edits a pending job’s payload, priority and run time after a confirmation; a claimed job is left alone', async () => {
        const queue = `edit-${engine.kind}`;
        const q = store.queue(queue);
        const id = await q.enqueue({ v: 1 }, { delayMs: 3_600_000 });
        const page = await get(`${BASE}/job?queue=${queue}&id=${id}`).expect(200);
        expect(page.text).toContain('id="edit-job"');
        const fields = {
          action: 'edit',
          queue,
          id: String(id),
          back: 'job',
          payload: JSON.stringify({ v: 2, html: XSS }),
          priority: '9',
          runAt: 'now',
        };
        const confirm = await post(fields, 200);
        expect(confirm.text).toContain(`Save job ${id} of queue`);
        expect(confirm.text).not.toContain(XSS);
        expect((await q.getJob(id))?.payload).toEqual({ v: 1 });
        const done = await post({ ...fields, confirm: 'yes' }, 303, { 'x-user': 'frank' });
        expect(done.headers.location).toBe(`${BASE}/job?queue=${queue}&id=${id}&done=edit&n=1`);
        const edited = await q.getJob(id);
        expect(edited).toMatchObject({ payload: { v: 2, html: XSS }, priority: 9 });
        expect(edited!.runAt).toBeLessThanOrEqual(await store.now());
        expect(audited).toContainEqual(
          expect.objectContaining({ action: 'edit', queue, jobs: [id], count: 1, actor: 'frank' }),
        );
        // Claimed: no form, and a stale form changes nothing.
        const claimed = await waitFor('a claim', () => q.claimOne('w'));
        expect(claimed.id).toBe(id);
        expect((await get(`${BASE}/job?queue=${queue}&id=${id}`).expect(200)).text).not.toContain('id="edit-job"');
        const refused = await post({ ...fields, payload: '{"v":3}', confirm: 'yes' }, 303);
        expect(refused.headers.location).toContain('done=edit&n=0');
        expect((await get(unescape(refused.headers.location as string)).expect(200)).text).toContain(
          'Nothing changed: the job is no longer pending',
        );
        expect((await q.getJob(id))?.payload).toEqual({ v: 2, html: XSS });
      });

      it('refuses create and edit to viewers and to forms without the CSRF token', async () => {
        const queue = `edit-roles-${engine.kind}`;
        const id = await store.queue(queue).enqueue({ v: 1 });
        const viewerPage = await get(`${BASE}/job?queue=${queue}&id=${id}`, { 'x-role': 'viewer' }).expect(200);
        expect(viewerPage.text).not.toContain('id="edit-job"');
        expect((await get(`${BASE}/new?queue=${queue}`, { 'x-role': 'viewer' }).expect(200)).text).not.toContain(
          'name="payload"',
        );
        await post({ action: 'edit', queue, id: String(id), payload: '{"v":2}', confirm: 'yes' }, 403, {
          'x-role': 'viewer',
        });
        await post({ action: 'enqueue', queue, payload: '{"v":2}', confirm: 'yes' }, 403, { 'x-role': 'viewer' });
        await post({ action: 'edit', queue, id: String(id), payload: '{"v":2}', confirm: 'yes', csrf: 'forged' }, 403);
        await post({ action: 'enqueue', queue, payload: '{"v":2}', confirm: 'yes', csrf: 'forged' }, 403);
        expect((await store.queue(queue).getJob(id))?.payload).toEqual({ v: 1 });
        expect((await store.queue(queue).stats()).pending).toBe(1);
      });

      it('lists the workers holding jobs, with host, pid and queue; a lapsed worker is marked', async () => {
        const queue = `workers-${engine.kind}`;
        const q = store.queue(queue);
        await q.enqueueMany([1, 2, 3]);
        const live = await q.claimBatch(2, 'web-1:4242:abcdef');
        const stalled = await q.claimBatch(1, `bad-${XSS}`, { leaseMs: 1 });
        expect(live.length + stalled.length).toBe(3);
        const page = await waitFor('the stalled lease to lapse', async () => {
          const res = await get(`${BASE}/workers`).expect(200);
          return res.text.includes('lapsed:') ? res : null;
        });
        const row = /<tr data-worker="web-1:4242:abcdef" data-queue="([^"]+)">(.*?)<\/tr>/s.exec(page.text);
        expect(row?.[1]).toBe(queue);
        expect(row?.[2]?.replace(/>\s+</g, '><')).toContain('<td>web-1</td><td class="n">4242</td>');
        expect(row?.[2]).toMatch(/<td class="n">2<\/td>/);
        expect(row?.[2]).toContain('running');
        expect(page.text).not.toContain(XSS);
        expect(page.text).toContain('bad-&lt;script&gt;');
        for (const j of live) await j.ack();
        expect((await get(`${BASE}/workers`).expect(200)).text).not.toContain('data-worker="web-1:4242:abcdef"');
      });

      it('shows an outbox’s broker receipts, latest first, and finds one by message id', async () => {
        const ob = store.outbox(`rcpt-${engine.kind}`);
        await ob.recordReceipts([
          { messageId: 11, receipt: { broker: 'nats-jetstream', stream: 'ORDERS', seq: 501, duplicate: false } },
          { messageId: 12, receipt: { broker: 'rabbitmq', exchange: 'orders', deliveryTag: 9, note: XSS } },
        ]);
        await ob.enqueue({ e: 1 });
        expect((await get(`${BASE}/outboxes`).expect(200)).text).toContain(`href="${BASE}/receipts?outbox=${ob.name}"`);
        const page = await get(`${BASE}/receipts?outbox=${ob.name}`).expect(200);
        const rows = [...page.text.matchAll(/<tr data-message="(\d+)">(.*?)<\/tr>/gs)];
        expect(rows.map((m) => Number(m[1])).sort()).toEqual([11, 12]);
        const nats = rows.find((m) => m[1] === '11')![2]!;
        expect(nats).toContain('nats-jetstream');
        expect(nats).toContain('<b>stream</b>=<code>ORDERS</code>');
        expect(nats).toContain('<b>seq</b>=<code>501</code>');
        expect(page.text).not.toContain(XSS);
        const one = await get(`${BASE}/receipts?outbox=${ob.name}&id=12`).expect(200);
        expect([...one.text.matchAll(/data-message="(\d+)"/g)].map((m) => m[1])).toEqual(['12']);
        expect(one.text).toContain('<b>deliveryTag</b>=<code>9</code>');
        expect((await get(`${BASE}/receipts?outbox=${ob.name}&id=99`).expect(200)).text).toContain(
          'No receipt for message 99',
        );
        await get(`${BASE}/receipts?outbox=${ob.name}&id=x`).expect(400);
        await get(`${BASE}/receipts`).expect(400);
      });

      it('shows a schedule’s recent fires from its stored jobs, with boundary and lateness', async () => {
        const name = `fires-${engine.kind}`;
        const queue = `fires-q-${engine.kind}`;
        await store.schedule(name, '@every 1d', queue, { kind: XSS });
        const first = await store.triggerSchedule(name);
        const second = await store.triggerSchedule(name);
        await store.queue(queue).enqueue({ not: 'a fire' });
        const list = await get(`${BASE}/schedules`).expect(200);
        expect(list.text).toContain(`href="${BASE}/schedule?name=${name}"`);
        const page = await get(`${BASE}/schedule?name=${name}`).expect(200);
        expect(jobIdsOf(page.text)).toEqual([second, first]);
        expect(page.text).not.toContain(XSS);
        expect(page.text).toContain('<code>@every 1d</code>');
        await get(`${BASE}/schedule?name=nope-${engine.kind}`).expect(404);
        // The header filter behind it works in the queue search too.
        const search = await get(
          `${BASE}/queue?name=${queue}&state=all&header=${encodeURIComponent(`alkstore-schedule = ${name}`)}`,
        ).expect(200);
        expect(jobIdsOf(search.text)).toEqual([second, first]);
      });
    });
  }
