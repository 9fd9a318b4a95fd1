import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { AuditEntry } from '../../lib/dashboard/index.js';
import { DashboardService } from '../../lib/dashboard/dashboard.service.js';
import { waitFor } from '../helpers/engines.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { actorOf, BASE, dashboardClient, jobIdsOf, roleOf, TokenGuard, withDashboardApp } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

// Dashboard v3 over HTTP on both engines (Express; the adapters share every page's code): flows, search
// that keeps scanning, the compact queue page, row selection, dead letters by error, the fleet view.

const audited: AuditEntry[] = [];

for (const engine of nestEngines())
  describe(`dashboard v3 [${engine.name}]`, () => {
    let app: INestApplication;
    let store: Store;
    withDashboardApp(engine, (made) => ({ app, store } = made), {
      path: '/alkstore',
      guard: TokenGuard,
      roles: roleOf,
      actor: actorOf,
      onAudit: (e) => audited.push(e),
      // The deep-search test asserts what is found, not how fast: a budget a loaded machine cannot run out of.
      searchBudgetMs: 30_000,
    });
    const { get, post } = dashboardClient(() => app);

    it('shows a flow: the tree with states and links, the parent link, a dead child with the policy, cancel flow', async () => {
      const queue = `flow-${engine.kind}`;
      const kids = `flow-kids-${engine.kind}`;
      const root = await store.queue(queue).enqueueFlow({
        payload: { step: 'ship' },
        onChildDead: 'continue',
        children: [
          { queue: kids, payload: { step: 'pack' }, opts: { maxAttempts: 1 } },
          { queue: kids, payload: { step: 'label' }, children: [{ queue: kids, payload: { step: 'print' } }] },
        ],
      });
      const [pack, label] = root.children;
      const print = label!.children[0]!;
      const job = await waitFor('the pack job', async () => {
        const j = await store.queue(kids).claimOne('w1');
        if (j && j.id !== pack!.id) throw new Error(`claimed ${j.id}, not the pack job`);
        return j;
      });
      await job.fail(new Error('box too small\nat pack()'));

      const page = await get(`${BASE}/job?queue=${queue}&id=${root.id}`).expect(200);
      expect(page.text).toMatch(/id="job-state">waiting on 1 child \(/);
      expect(page.text).toContain('Waiting on <b>1</b> of 2 children.');
      expect(page.text).toContain('continue: a dead dependency counts as done');
      expect(page.text).toMatch(new RegExp(`data-flow-job="${pack!.id}" data-state="dead"`));
      expect(page.text).toContain('box too small');
      expect(page.text).not.toContain('at pack()');
      expect(page.text).toMatch(new RegExp(`data-flow-job="${print.id}" data-state="pending"`));
      expect(page.text).toContain(`href="${BASE}/job?queue=${kids}&amp;id=${print.id}"`);
      expect(page.text).toContain('data-action="cancel-flow"');

      const child = await get(`${BASE}/job?queue=${kids}&id=${print.id}`).expect(200);
      expect(child.text).toContain(`Waited for by:`);
      expect(child.text).toContain(`href="${BASE}/job?queue=${kids}&amp;id=${label!.id}"`);

      const list = await get(`${BASE}/queue?name=${queue}&state=all`).expect(200);
      expect(list.text).toContain('waiting on 1 child');

      const ask = await post({ action: 'cancel-flow', queue, id: String(root.id), back: 'job' }, 200);
      expect(ask.text).toContain(`Cancel the flow of job ${root.id}`);
      const done = await post({ action: 'cancel-flow', queue, id: String(root.id), back: 'job', confirm: 'yes' }, 303, {
        'x-user': 'ops-flow',
      });
      expect(done.headers.location).toContain(`/job?queue=${queue}&id=${root.id}&done=cancel-flow&n=3`);
      expect(await store.queue(queue).getJob(root.id)).toMatchObject({ state: 'cancelled' });
      expect(await store.queue(kids).getJob(print.id)).toMatchObject({ state: 'cancelled' });
      expect(audited).toContainEqual(
        expect.objectContaining({ action: 'cancel-flow', actor: 'ops-flow', queue, jobs: [root.id], count: 3 }),
      );
      // A viewer sees the flow but not the action; a forged cross-site post is refused.
      const viewer = await get(`${BASE}/job?queue=${kids}&id=${label!.id}`, { 'x-role': 'viewer' }).expect(200);
      expect(viewer.text).not.toContain('data-action="cancel-flow"');
      await post({ action: 'cancel-flow', queue, id: String(root.id), confirm: 'yes' }, 403, {
        origin: 'https://evil.example',
      });
    });

    it('search keeps scanning: 20 matches among the oldest of many rows are on the first page', async () => {
      // 100,000 jobs on PostgreSQL (five search slices); SQLite, run on every change, gets 45,000 (three slices).
      const total = engine.kind === 'postgres' ? 100_000 : 45_000;
      const queue = `deep-${engine.kind}`;
      const q = store.queue(queue);
      const needles = await q.enqueueMany(Array.from({ length: 20 }, (_, i) => ({ kind: 'needle', i })));
      for (let done = 20; done < total; done += 10_000)
        await q.enqueueMany(Array.from({ length: Math.min(10_000, total - done) }, () => ({ kind: 'hay' })));
      const page = await get(
        `${BASE}/queue?name=${queue}&state=all&payload=${encodeURIComponent('kind = "needle"')}`,
      ).expect(200);
      expect(jobIdsOf(page.text)).toEqual([...needles].reverse());
      expect(page.text).toMatch(/id="looked-at" data-scanned="(\d+)"/);
      expect(Number(/data-scanned="(\d+)"/.exec(page.text)![1])).toBeGreaterThanOrEqual(total);
      expect(page.text).toContain('down to the oldest row: no more matches.');
    }, 240_000);

    it('starts the queue page with its jobs: charts and limits collapsed, page size, sorting the page', async () => {
      const queue = `list-${engine.kind}`;
      const q = store.queue(queue);
      const ids = await q.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ n: i })));
      const j = await waitFor('a claim', () => q.claimOne('w'));
      await j.retry(new Error('later'), 0);
      const page = await get(`${BASE}/queue?name=${queue}&state=all&size=25`).expect(200);
      expect(jobIdsOf(page.text)).toHaveLength(25);
      expect(page.text).toMatch(/<details class="strip" id="queue-insights">\s*<summary>Charts and limits<\/summary>/);
      expect(page.text.indexOf('id="queue-insights"')).toBeLessThan(page.text.indexOf('class="jobs compact"'));
      expect(page.text).toMatch(/class="on"\s+data-size="25"|data-size="25"\s+class="on"/);
      const next = /rel="next" href="([^"]+)"/.exec(page.text)![1]!.replace(/&amp;/g, '&');
      expect(next).toContain('size=25');
      const sorted = await get(`${BASE}/queue?name=${queue}&state=all&size=25&sort=attempts&dir=desc`).expect(200);
      expect(jobIdsOf(sorted.text)[0]).toBe(j.id);
      const byId = await get(`${BASE}/queue?name=${queue}&state=all&sort=id&dir=desc`).expect(200);
      expect(jobIdsOf(byId.text)).toEqual([...ids].reverse());
    });

    it('acts on selected rows: counted, confirmed, audited; refused cross-site and for viewers', async () => {
      const queue = `pick-${engine.kind}`;
      const q = store.queue(queue, { maxAttempts: 1 });
      const [a, b, c, d] = await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
      const dead = await waitFor('a claim', () => q.claimOne('w'));
      await dead.fail(new Error('boom'));
      const page = await get(`${BASE}/queue?name=${queue}&state=all`).expect(200);
      expect(page.text).toContain(`name="ids" value="${b}" form="selected"`);
      const viewer = await get(`${BASE}/queue?name=${queue}&state=all`, { 'x-role': 'viewer' }).expect(200);
      expect(viewer.text).not.toContain('name="ids"');
      expect(viewer.text).not.toContain('id="selected"');
      const ask = await post({ action: 'selected-cancel', queue, ids: `${b},${c}` }, 200);
      expect(ask.text).toContain(`Cancel the 2 selected jobs of queue &quot;${queue}&quot; (${b}, ${c})?`);
      await post({ action: 'selected-cancel', queue, ids: `${b},${c}`, confirm: 'yes' }, 403, {
        origin: 'https://evil.example',
      });
      expect(await q.getJob(b!)).toMatchObject({ state: 'pending' });
      const done = await post({ action: 'selected-cancel', queue, ids: `${b},${c}`, confirm: 'yes' }, 303, {
        'x-user': 'ops-pick',
      });
      expect(done.headers.location).toContain('done=selected-cancel&n=2');
      expect(await q.getJob(c!)).toMatchObject({ state: 'cancelled' });
      expect(audited).toContainEqual(
        expect.objectContaining({ action: 'selected-cancel', actor: 'ops-pick', jobs: [b, c], count: 2 }),
      );
      const retried = await post({ action: 'selected-retry', queue, ids: `${dead.id},${d}`, confirm: 'yes' }, 303);
      expect(retried.headers.location).toContain('done=selected-retry&n=1');
      expect(await q.getJob(dead.id)).toMatchObject({ state: 'pending' });
      const deleted = await post({ action: 'selected-delete', queue, ids: `${a},${d}`, confirm: 'yes' }, 303);
      expect(deleted.headers.location).toContain('done=selected-delete&n=');
      await post({ action: 'selected-delete', queue, ids: 'x', confirm: 'yes' }, 400);
    });

    it('cancels every live job a filter matches: counted, confirmed, audited; dead ones and other jobs stay', async () => {
      const queue = `bulk-cancel-${engine.kind}`;
      const q = store.queue(queue, { maxAttempts: 1 });
      const acme = await q.enqueueMany(Array.from({ length: 6 }, (_, i) => ({ tenant: 'acme', i })));
      const other = await q.enqueueMany([{ tenant: 'globex' }, { tenant: 'globex' }]);
      const [dead, held] = await q.claimBatch(2, 'w');
      expect([dead!.id, held!.id]).toEqual(acme.slice(0, 2));
      await dead!.fail(new Error('gone'));
      const filter = { action: 'bulk-cancel', name: queue, state: 'all', payload: 'tenant = "acme"' };
      const strip = await get(`${BASE}/queue?name=${queue}&state=all&payload=${encodeURIComponent('tenant = "acme"')}`);
      expect(strip.text).toMatch(/data-action="bulk-cancel"\s*>Cancel all matching live jobs</);
      const ask = await post(filter, 200);
      expect(ask.text).toContain(`Cancel 5 jobs of queue &quot;${queue}&quot;`);
      const op = /name="op" value="([^"]+)"/.exec(ask.text)![1]!;
      await post({ ...filter, op, matched: '5', confirm: 'yes' }, 403, { 'x-role': 'viewer' });
      await post({ ...filter, op, matched: '5', confirm: 'yes', csrf: 'forged' }, 403);
      expect(await q.getJob(acme[2]!)).toMatchObject({ state: 'pending' });
      const done = await post({ ...filter, op, matched: '5', confirm: 'yes' }, 303, { 'x-user': 'ops-bulk' });
      expect(done.headers.location).toBe(`${BASE}/bulk?op=${op}`);
      await app.get(DashboardService, { strict: false }).idle();
      const progress = await get(done.headers.location as string).expect(200);
      expect(progress.text).toContain('data-state="done"');
      expect(progress.text.replace(/\s+/g, ' ')).toContain('<b id="bulk-changed">5</b> cancelled');
      for (const id of acme.slice(1)) expect(await q.getJob(id)).toMatchObject({ state: 'cancelled' });
      expect(await q.getJob(dead!.id)).toMatchObject({ state: 'dead' });
      for (const id of other) expect(await q.getJob(id)).toMatchObject({ state: 'pending' });
      expect(audited.filter((e) => e.op === op).map((e) => [e.action, e.count, e.actor])).toEqual([
        ['bulk-cancel', 5, 'ops-bulk'],
        ['bulk-cancel-done', 5, 'ops-bulk'],
      ]);
    });

    it('names each action the same on every page, and keeps a large payload out of the edit box', async () => {
      const queue = `names-${engine.kind}`;
      const q = store.queue(queue, { maxAttempts: 1 });
      const big = await q.enqueue({ blob: 'y'.repeat(200_000) }, { delayMs: 3_600_000 });
      await q.enqueue({ small: true });
      const dead = await waitFor('a claim', () => q.claimOne('w'));
      await dead.fail(new Error('nope'));
      const pages = [
        await get(`${BASE}/queue?name=${queue}&state=dead`).expect(200),
        await get(`${BASE}/dead?queue=${queue}`).expect(200),
        await get(`${BASE}/job?queue=${queue}&id=${dead.id}`).expect(200),
      ];
      for (const p of pages) {
        expect(p.text).toMatch(/data-action="redrive"\s*>Retry</);
        expect(p.text).toMatch(/data-action="purge"\s*>Delete</);
        expect(p.text).not.toMatch(/>(Redrive|Purge|Retry now)</);
      }
      {
        const page = await get(`${BASE}/job?queue=${queue}&id=${big}`).expect(200);
        expect(page.text).toContain('id="payload-read-only"');
        expect(page.text).not.toContain('id="payload-input"');
        expect(page.text.length).toBeLessThan(60_000);
        expect(page.text).toContain('id="payload-all"');
        expect(page.text).toContain(`id="payload-download" href="${BASE}/payload?queue=${queue}&amp;id=${big}"`);
        // The whole payload as a JSON download, behind the same guard.
        const file = await get(`${BASE}/payload?queue=${queue}&id=${big}`).expect(200);
        expect(file.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(file.headers['content-disposition']).toBe(`attachment; filename="job-${big}-payload.json"`);
        expect(file.headers['x-content-type-options']).toBe('nosniff');
        expect(JSON.parse(file.text)).toEqual({ blob: 'y'.repeat(200_000) });
        await request(app.getHttpServer()).get(`${BASE}/payload?queue=${queue}&id=${big}`).expect(403);
        await get(`${BASE}/payload?queue=${queue}&id=${big}`, { 'x-role': 'nobody' }).expect(403);
        await get(`${BASE}/payload?queue=${queue}&id=${big}`, { 'x-role': 'viewer' }).expect(200);
        await get(`${BASE}/payload?queue=${queue}&id=x`).expect(400);
        await get(`${BASE}/payload?queue=${queue}&id=999999999`).expect(404);
      }
    });

    it('groups dead letters by the first line of their error, with a count and a retry per group', async () => {
      const queue = `groups-${engine.kind}`;
      const q = store.queue(queue, { maxAttempts: 1 });
      await q.enqueueMany(Array.from({ length: 5 }, (_, i) => ({ i })));
      const timeouts: number[] = [];
      for (let i = 0; i < 5; i++) {
        const j = await waitFor('a claim', () => q.claimOne('w'));
        if (i < 3) timeouts.push(j.id);
        await j.fail(new Error(i < 3 ? `ETIMEDOUT\n    at attempt ${i}` : 'card declined <b>'));
      }
      const page = await get(`${BASE}/dead?queue=${queue}`).expect(200);
      expect(page.text).toMatch(/data-group-count="3">\s*<td><code class="error">ETIMEDOUT<\/code>/);
      expect(page.text).toContain('card declined &lt;b&gt;');
      expect(page.text).toContain(`name="ids" value="${timeouts.join(',')}"`);
      const done = await post({ action: 'selected-retry', queue, ids: timeouts.join(','), confirm: 'yes' }, 303);
      expect(done.headers.location).toContain('done=selected-retry&n=3');
      for (const id of timeouts) expect(await q.getJob(id)).toMatchObject({ state: 'pending' });
    });

    it('labels the time axis of every chart, the zone named', async () => {
      const queue = `axis-${engine.kind}`;
      await store.queue(queue).enqueue({ a: 1 });
      for (const path of [BASE, `${BASE}/queue?name=${queue}`, `${BASE}/outboxes`]) {
        const page = await get(path).expect(200);
        const charts = [...page.text.matchAll(/<figure class="chart[^"]*"[^>]*>(.*?)<\/figure>/gs)].map((m) => m[1]!);
        for (const c of charts) {
          const labels = [...c.matchAll(/class="axis time"[^>]*>(.*?)<\/text/gs)].map((m) => m[1]!.trim());
          expect(labels.length).toBeGreaterThanOrEqual(4);
          expect(labels.every((l) => /^\d\d:\d\d( UTC)?$/.test(l))).toBe(true);
          expect(labels[labels.length - 1]).toMatch(/ UTC$/);
        }
        if (path !== `${BASE}/outboxes`) expect(charts.length).toBeGreaterThan(0);
      }
    });

    it('writes absolute times with their zone on job pages and on hover', async () => {
      const queue = `times-${engine.kind}`;
      const id = await store.queue(queue).enqueue({ t: 1 });
      const page = await get(`${BASE}/job?queue=${queue}&id=${id}`).expect(200);
      expect(page.text).toMatch(
        /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC">/,
      );
    });
  });
