import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { AuditEntry } from '../../lib/dashboard/index.js';
import { DashboardService } from '../../lib/dashboard/dashboard.service.js';
import { waitFor } from '../helpers/engines.js';
import { HTTP_ADAPTERS } from '../helpers/http-adapters.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { actorOf, BASE, dashboardClient, jobIdsOf, roleOf, TokenGuard, withDashboardApp } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

const XSS = '<script>window.__owned = 1</script>';

const audited: AuditEntry[] = [];

function unescape(href: string): string {
  return href.replace(/&amp;/g, '&');
}

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`dashboard features over HTTP [${engine.name}, ${adapter}]`, () => {
      let app: INestApplication;
      let store: Store;
      withDashboardApp(
        engine,
        (made) => ({ app, store } = made),
        { path: '/alkstore', guard: TokenGuard, roles: roleOf, actor: actorOf, onAudit: (e) => audited.push(e) },
        adapter,
      );

      const { get, post } = dashboardClient(() => app);

      it('scopes the CSRF cookie to the configured mount, whatever path the request used', async () => {
        for (const path of [
          '',
          '/queue?name=x',
          '/dead',
          '/audit',
          '/x;Path=/;Max-Age=315360000;/alkstore',
          '/alkstore/alkstore',
          '/a/b/c;Path=/x',
        ]) {
          const res = await get(`${BASE}${path}`);
          if (!res.headers['set-cookie']) throw new Error(`${path}: ${res.status} ${res.text.slice(0, 300)}`);
          const cookie = ([] as string[])
            .concat(res.headers['set-cookie'] ?? [])
            .find((c) => c.startsWith('alkstore_csrf='));
          expect(cookie).toMatch(/^alkstore_csrf=[A-Za-z0-9_-]+; Path=\/ops\/alkstore; HttpOnly; SameSite=Strict$/);
          // Links and forms name the mount too, never the request's path.
          expect(res.text).not.toContain('Max-Age');
          expect(res.text).not.toContain('Path=/');
          expect(res.text).toContain(`href="${BASE}/audit"`);
        }
        const action = await post({ action: 'pause', queue: 'q' }, 200);
        expect(action.text).toContain(`action="${BASE}/action"`);
      });

      it('shows a job: payload, headers, trace id, keys, worker, timeline with the error, actions for its state', async () => {
        const queue = `detail-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        const big = 'x'.repeat(5000);
        const id = await q.enqueue(
          { orderId: 42, html: XSS, big },
          {
            uniqueKey: 'order-42',
            orderingKey: 'cust-1',
            concurrencyKey: 'tenant-9',
            rateLimitKey: `dom-${XSS}`,
            headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', note: XSS },
          },
        );
        const job = await waitFor('a claim', () => q.claimOne('worker-a'));
        const running = await get(`${BASE}/job?queue=${queue}&id=${id}`).expect(200);
        expect(running.text).toContain('<code>worker-a</code>');
        expect(running.text).toMatch(/id="job-state">processing</);
        await job.fail(new Error(`card declined ${XSS}`));
        const res = await get(`${BASE}/job?queue=${queue}&id=${id}`).expect(200);
        expect(res.text).toContain('0af7651916cd43dd8448eb211c80319c');
        expect(res.text).toContain('order-42');
        expect(res.text).toContain('cust-1');
        expect(res.text).toContain('id="job-concurrency-key">tenant-9<');
        expect(res.text).toContain('id="job-rate-key">dom-&lt;script&gt;');
        expect(res.text).toMatch(/id="job-state">dead</);
        expect(res.text).toContain('card declined &lt;script&gt;');
        expect(res.text).not.toContain(XSS);
        expect(res.text).toContain('Show all of the payload');
        expect(res.text).not.toContain(big);
        expect((await get(`${BASE}/job?queue=${queue}&id=${id}&full=1`).expect(200)).text).toContain(big);
        expect(res.text).toContain('data-action="redrive"');
        expect(res.text).toContain('data-action="purge"');
        expect(res.text).not.toContain('data-action="cancel"');
        // Retry from the job page comes back to it, with the operator action on its timeline.
        const done = await post({ action: 'redrive', queue, id: String(id), back: 'job', confirm: 'yes' }, 303, {
          'x-user': 'alice',
        });
        expect(done.headers.location).toBe(`${BASE}/job?queue=${queue}&id=${id}&done=redrive&n=1`);
        const after = await get(unescape(done.headers.location as string)).expect(200);
        expect(after.text).toMatch(/id="job-state">pending</);
        expect(after.text).toContain('Operator <b>alice</b> (admin): redrive');
        expect(after.text).toContain('data-action="cancel"');
        await get(`${BASE}/job?queue=${queue}&id=999999999`).expect(404);
        await get(`${BASE}/job?queue=${queue}&id=abc`).expect(400);
      });

      it('lists each failed attempt on the job timeline with its worker and its error, escaped and collapsible, then the current attempt', async () => {
        const queue = `attempts-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 3 });
        const id = await q.enqueue({ n: 1 });
        await (await waitFor('claim 1', () => q.claimOne('worker-a'))).retry(new Error(`first ${XSS}`), 0);
        await (await waitFor('claim 2', () => q.claimOne('worker-b'))).retry(new Error('second boom'), 0);
        await waitFor('claim 3', () => q.claimOne('worker-c'));
        const res = await get(`${BASE}/job?queue=${queue}&id=${id}`).expect(200);
        // Whitespace between tags and inside text is layout only: compare with it folded.
        const timeline = res.text
          .slice(res.text.indexOf('id="timeline"'))
          .replace(/>\s+</g, '><')
          .replace(/\n[ \t]+(?![ \t]|at )/g, ' ');
        expect(timeline).not.toContain(XSS);
        const at = (s: string) => {
          const i = timeline.indexOf(s);
          if (i < 0) throw new Error(`timeline lacks ${s}: ${timeline.slice(0, 2000)}`);
          return i;
        };
        // In order: attempt 1 by worker-a failed with its error, attempt 2 by worker-b, then the current one by worker-c.
        const a1 = at('Attempt 1 claimed by worker <code>worker-a</code>');
        const e1 = at('<details class="attempt-error"><summary>Error: first &lt;script&gt;');
        const a2 = at('Attempt 2 claimed by worker <code>worker-b</code>');
        // The full error is the stack: its first line, then the frames of this file.
        const e2 = at('<pre class="error full">Error: second boom\n    at ');
        expect(timeline.slice(e2, timeline.indexOf('</pre>', e2))).toContain('dashboard-features.test.ts');
        const a3 = at('Attempt 3 of 3 by worker <code>worker-c</code>');
        expect([a1 < e1, e1 < a2, a2 < e2, e2 < a3]).toEqual([true, true, true, true]);
      });

      it('lists completed and cancelled jobs in the history and shows a finished job with its result, progress and outcome', async () => {
        const queue = `history-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        const [done, cancelled, dead] = await q.enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
        const jobs = await q.claimBatch(3, 'w');
        expect(await jobs[0]!.progress({ percent: 60, html: XSS })).toBe(true);
        await jobs[0]!.ack({ receipt: XSS, total: 42 });
        expect(await q.cancel(cancelled!)).toBe(true);
        await jobs[2]!.fail(new Error('declined'));
        const history = await get(`${BASE}/queue?name=${queue}&state=finished`).expect(200);
        expect(jobIdsOf(history.text)).toEqual([dead, cancelled, done]);
        expect(history.text).not.toContain(XSS);
        const page = await get(`${BASE}/job?queue=${queue}&id=${done}`).expect(200);
        expect(page.text).toMatch(/id="job-state">completed</);
        expect(page.text).toMatch(/<pre class="full" id="job-result">[^<]*&quot;total&quot;: 42/);
        expect(page.text).toContain('&lt;script&gt;');
        expect(page.text).not.toContain(XSS);
        expect(page.text).toMatch(/<progress max="100" value="60">/);
        expect(page.text).toContain('id="job-finished"');
        expect(page.text).toContain('<span class="ok">Completed</span> with a result');
        // History has nothing to act on.
        expect(page.text).not.toContain('data-action="cancel"');
        const gone = await get(`${BASE}/job?queue=${queue}&id=${cancelled}`).expect(200);
        expect(gone.text).toMatch(/id="job-state">cancelled</);
        expect(gone.text).toContain('<span class="warn">Cancelled</span>');
        expect(gone.text).not.toContain('id="job-result"');
        // A bulk delete of the history counts and deletes the dead job only: outcome records are history.
        const confirm = await post({ action: 'bulk-delete', name: queue, state: 'finished' }, 200);
        expect(confirm.text).toContain(`Delete 1 job of queue`);
        const op = /name="op" value="([^"]+)"/.exec(confirm.text)![1]!;
        await post({ action: 'bulk-delete', name: queue, state: 'finished', op, matched: '1', confirm: 'yes' }, 303);
        await app.get(DashboardService, { strict: false }).idle();
        expect(await q.getJob(dead!)).toBeNull();
        expect(await q.getJob(done!)).toMatchObject({ state: 'completed', result: { receipt: XSS, total: 42 } });
        expect(await q.getJob(cancelled!)).toMatchObject({ state: 'cancelled' });
      });

      it('searches by id, keys, state, error text, payload field and time, with the query in the URL and keyset pages', async () => {
        const queue = `search-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        const ids = await q.enqueueMany(
          Array.from({ length: 60 }, (_, i) => ({ orderId: i, kind: i % 2 === 0 ? 'even' : 'odd' })),
        );
        const keyed = await q.enqueue({ orderId: 1000 }, { uniqueKey: 'u-1000' });
        const page = await get(
          `${BASE}/queue?name=${queue}&state=all&payload=${encodeURIComponent('orderId = 42')}`,
        ).expect(200);
        expect([...page.text.matchAll(/data-job="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([ids[42]]);
        expect(page.text).toContain('value="orderId = 42"');
        const byKey = await get(`${BASE}/queue?name=${queue}&state=pending&unique=u-1000`).expect(200);
        expect([...byKey.text.matchAll(/data-job="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([keyed]);
        const byId = await get(`${BASE}/queue?name=${queue}&state=all&id=${ids[7]}`).expect(200);
        expect([...byId.text.matchAll(/data-job="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([ids[7]]);
        // Keyset pages, newest first, through the "search further" link.
        const seen: number[] = [];
        let url: string | null = `${BASE}/queue?name=${queue}&state=all&payload=${encodeURIComponent('kind = "even"')}`;
        while (url) {
          const res: request.Response = await get(url).expect(200);
          seen.push(...[...res.text.matchAll(/data-job="(\d+)"/g)].map((m) => Number(m[1])));
          const next: string | undefined = /rel="next" href="([^"]+)"/.exec(res.text)?.[1];
          url = next ? unescape(next) : null;
        }
        expect(seen).toEqual(ids.filter((_, i) => i % 2 === 0).reverse());
        // Error text, and a time window that excludes everything.
        const j = await waitFor('a claim', () => q.claimOne('w'));
        await j.fail(new Error('Gateway Timeout from upstream'));
        const byError = await get(`${BASE}/queue?name=${queue}&state=dead&error=gateway+timeout`).expect(200);
        expect([...byError.text.matchAll(/data-job="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([j.id]);
        const none = await get(`${BASE}/queue?name=${queue}&state=all&from=2999-01-01T00:00`).expect(200);
        expect(none.text).not.toMatch(/data-job="/);
        // Wrong fields are named.
        expect(
          (await get(`${BASE}/queue?name=${queue}&payload=${encodeURIComponent('a b c')}`).expect(400)).text,
        ).toContain('payload must look like');
        expect((await get(`${BASE}/queue?name=${queue}&from=yesterday`).expect(400)).text).toContain(
          'from must be a date',
        );
        expect((await get(`${BASE}/queue?name=${queue}&id=x1`).expect(400)).text).toContain('id must be a job id');
      });

      it('retries every dead job matching a filter after a confirmation with the count, once even if confirmed twice', async () => {
        const queue = `bulk-retry-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        await q.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ i, group: i < 20 ? 'a' : 'b' })));
        for (const job of await q.claimBatch(30, 'w'))
          await job.fail(new Error(job.payloadAs<{ group: string }>().group === 'a' ? 'smtp 550' : 'dns'));
        const filter = { name: queue, state: 'dead', error: 'smtp' };
        const confirm = await post({ action: 'bulk-retry', ...filter }, 200);
        expect(confirm.text).toContain('Retry 20 jobs of queue');
        const op = /name="op" value="([^"]+)"/.exec(confirm.text)![1]!;
        const fields = { action: 'bulk-retry', ...filter, op, matched: '20', confirm: 'yes' };
        const [first, second] = await Promise.all([
          post(fields, 303, { 'x-user': 'bob' }),
          post(fields, 303, { 'x-user': 'bob' }),
        ]);
        expect(first.headers.location).toBe(`${BASE}/bulk?op=${op}`);
        expect(second.headers.location).toBe(first.headers.location);
        await app.get(DashboardService, { strict: false }).idle();
        const progress = await get(first.headers.location as string).expect(200);
        expect(progress.text).toContain('data-state="done"');
        expect(progress.text).toContain('<b id="bulk-changed">20</b>');
        expect(await q.stats()).toMatchObject({ pending: 20, dead: 10 });
        const log = await get(`${BASE}/audit`).expect(200);
        expect(log.text.match(new RegExp(`<td>bulk-retry</td>`, 'g'))?.length).toBe(1);
        expect(log.text).toContain('<td>bulk-retry-done</td>');
      });

      it('charts a queue over the last hour by minute and the last day by hour', async () => {
        const queue = `charts-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        await q.enqueueMany([1, 2, 3, 4]);
        const jobs = await q.claimBatch(4, 'w');
        for (const j of jobs.slice(0, 3)) await j.ack();
        await jobs[3]!.fail(new Error('x'));
        const page = await get(`${BASE}/queue?name=${queue}`).expect(200);
        const figures = [...page.text.matchAll(/<figure class="chart">(.*?)<\/figure>/gs)].map((m) => m[1]!);
        expect(figures).toHaveLength(2);
        expect(figures[0]!.match(/class="ok"/g)).toHaveLength(60);
        expect(figures[1]!.match(/class="ok"/g)).toHaveLength(24);
        expect(figures[0]).toContain(`Jobs per minute, ${queue}: 3 completed, 1 retried or dead in the last hour`);
        expect(figures[1]).toContain(`Jobs per hour, ${queue}: 3 completed, 1 retried or dead in the last 24 hours`);
      });

      it('charts wait and run time (p50 and p95) per queue over the last hour and day, and shows the p95s on the queues page', async () => {
        const queue = `latency-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        await q.enqueueMany([1, 2, 3]);
        const jobs = await q.claimBatch(3, 'w');
        // Held before the outcome, so each run is at least this long (a lower bound, not a speed).
        await new Promise((r) => setTimeout(r, 120));
        for (const j of jobs.slice(0, 2)) await j.ack();
        await jobs[2]!.fail(new Error('x'));
        const page = await get(`${BASE}/queue?name=${queue}`).expect(200);
        const charts = [
          ...page.text.matchAll(/<figure class="chart latency" data-kind="(wait|run)">(.*?)<\/figure>/gs),
        ].map((m) => ({ kind: m[1]!, body: m[2]! }));
        expect(charts.map((c) => c.kind)).toEqual(['wait', 'wait', 'run', 'run']);
        expect(charts[0]!.body).toMatch(
          new RegExp(
            `Wait time per minute, ${queue}: 3 jobs waited \\(due to claimed\\), p50 [^,]+, p95 [^<]+ in the last hour`,
          ),
        );
        expect(charts[1]!.body).toContain(`Wait time per hour, ${queue}: 3 jobs waited`);
        expect(charts[2]!.body).toMatch(
          new RegExp(`Run time per minute, ${queue}: 3 jobs ran \\(claimed to finished\\), p50 \\d+ ms`),
        );
        expect(charts[3]!.body).toContain('in the last 24 hours');
        // One point per minute with finished jobs (two if the outcomes straddled a minute's end).
        expect(charts[2]!.body.match(/<circle [^>]*class="p50"/g)!.length).toBeLessThanOrEqual(2);
        const p50 = Number(/p50 (\d+) ms/.exec(charts[2]!.body)![1]);
        expect(p50).toBeGreaterThanOrEqual(100);
        const home = await get(BASE).expect(200);
        const row = new RegExp(`<tr data-queue="${queue}">.*?</tr>`, 's').exec(home.text)![0];
        expect(row).toMatch(/class="n run-p95">\d+ ms</);
        expect(row).toMatch(/class="n wait-p95">[^<–]+</);
      });

      it('offers pause and resume on the queue page to admins only', async () => {
        const queue = `controls-${engine.kind}`;
        await store.queue(queue).enqueue(1);
        const controls = async (headers: Record<string, string> = {}) =>
          /<section id="queue-controls"[^]*?<\/section>/.exec(
            (await get(`${BASE}/queue?name=${queue}`, headers).expect(200)).text,
          )?.[0] ?? null;
        expect(await controls()).toContain('data-action="pause"');
        const viewer = await controls({ 'x-role': 'viewer' });
        expect(viewer).toContain('id="limit-concurrency">1<');
        expect(viewer).not.toContain('data-action=');
        expect(viewer).not.toContain('<form');
        await post({ action: 'pause', queue, confirm: 'yes' }, 303);
        expect(await controls()).toContain('data-action="resume"');
      });

      it('shows the queue limits and lets an admin set and clear them, confirmed and audited; a viewer only reads them', async () => {
        const queue = `limits-${engine.kind}`;
        const q = store.queue(queue);
        await q.enqueue(1);
        const controls = async (headers: Record<string, string> = {}) =>
          /<section id="queue-controls"[^]*?<\/section>/.exec(
            (await get(`${BASE}/queue?name=${queue}`, headers).expect(200)).text,
          )?.[0] ?? '';
        const shown = (section: string) =>
          ['concurrency', 'global', 'key-rate', 'rate'].map(
            (k) => new RegExp(`id="limit-${k}">([^<]*)<`).exec(section)?.[1],
          );
        expect(shown(await controls())).toEqual(['1', 'none', 'none', 'none']);
        expect(await controls()).toContain('data-action="limits"');
        const form = {
          action: 'limits',
          queue,
          concurrencyLimit: '3',
          globalConcurrency: '10',
          keyRateMax: '5',
          keyRatePerMs: '1000',
          rateMax: '50',
          ratePerMs: '60000',
        };
        // Without confirm=yes: a question naming the values, nothing stored yet.
        const ask = await post(form, 200);
        expect(ask.text).toContain(
          'concurrency per key 3, global concurrency 10, rate limit per key 5 per 1000 ms, queue rate limit 50 per 60000 ms',
        );
        expect((await q.settings()).concurrencyLimit).toBe(1);
        // A viewer is refused; bad input is refused before anything is stored.
        await post({ ...form, confirm: 'yes' }, 403, { 'x-role': 'viewer' });
        expect((await post({ ...form, keyRatePerMs: '', confirm: 'yes' }, 400)).text).toContain(
          'keyRateMax and keyRatePerMs go together',
        );
        expect((await post({ ...form, globalConcurrency: '-2', confirm: 'yes' }, 400)).text).toContain(
          'globalConcurrency must be a whole number',
        );
        expect((await q.settings()).globalConcurrency).toBeNull();
        const before = audited.length;
        const done = await post({ ...form, confirm: 'yes' }, 303, { 'x-user': 'erin' });
        expect(done.headers.location).toBe(`${BASE}/queue?name=${queue}&done=limits&n=1`);
        expect(await store.queue(queue).settings()).toMatchObject({
          concurrencyLimit: 3,
          globalConcurrency: 10,
          keyRateLimit: { max: 5, perMs: 1000 },
          rateLimit: { max: 50, perMs: 60_000 },
        });
        expect(shown(await controls({ 'x-role': 'viewer' }))).toEqual(['3', '10', '5 per 1000 ms', '50 per 60000 ms']);
        expect(audited.slice(before).find((e) => e.queue === queue)).toMatchObject({
          actor: 'erin',
          action: 'limits',
          count: 1,
          filter: expect.stringContaining('global concurrency 10'),
        });
        // Empty fields clear their limits (the per-key concurrency goes back to its default of 1).
        await post({ action: 'limits', queue, confirm: 'yes' }, 303);
        expect(await q.settings()).toMatchObject({
          concurrencyLimit: 1,
          globalConcurrency: null,
          keyRateLimit: null,
          rateLimit: null,
        });
        expect(shown(await controls())).toEqual(['1', 'none', 'none', 'none']);
      });

      it('keeps viewers to reading and refuses requests without a role', async () => {
        const queue = `roles-${engine.kind}`;
        await store.queue(queue).enqueue(1);
        const viewer = await get(`${BASE}/queue?name=${queue}`, { 'x-role': 'viewer' }).expect(200);
        expect(viewer.text).toContain('data-job=');
        expect(viewer.text).not.toContain('data-action=');
        expect(viewer.text).toContain('read-only');
        await post({ action: 'pause', queue, confirm: 'yes' }, 403, { 'x-role': 'viewer' });
        expect((await store.queue(queue).settings()).paused).toBe(false);
        await get(`${BASE}/queue?name=${queue}`, { 'x-role': 'stranger' }).expect(403);
        await post({ action: 'pause', queue, confirm: 'yes' }, 403, { 'x-role': 'stranger' });
        await post({ action: 'pause', queue, confirm: 'yes' }, 303, { 'x-role': 'admin', 'x-user': 'carol' });
        expect((await store.queue(queue).settings()).paused).toBe(true);
      });

      it('writes every action to the audit log with who, what and which jobs, shows it, and emits it', async () => {
        const queue = `audit-${engine.kind}`;
        const id = await store.queue(queue).enqueue(1);
        const before = audited.length;
        await post({ action: 'cancel', queue, id: String(id), confirm: 'yes' }, 303, { 'x-user': `dave <${XSS}>` });
        const entry = audited.slice(before).find((e) => e.queue === queue);
        expect(entry).toMatchObject({ actor: `dave <${XSS}>`, role: 'admin', action: 'cancel', jobs: [id], count: 1 });
        const stored = await store.admin().auditLog().readSince(0, 1000);
        expect(stored.map((e) => e.payload)).toContainEqual(
          expect.objectContaining({ action: 'cancel', queue, jobs: [id], actor: `dave <${XSS}>` }),
        );
        const log = await get(`${BASE}/audit`).expect(200);
        expect(log.text).toContain(`dave &lt;&lt;script&gt;`);
        expect(log.text).not.toContain(XSS);
        expect(log.text).toContain(`>${queue}</a>`);
      });
    });
  }
