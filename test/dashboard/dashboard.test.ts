import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { Body, Controller, Post, type INestApplication } from '@nestjs/common';
import request from 'supertest';
import { InvalidOption } from '../../lib/contract/errors.js';
import { AlkstoreDashboardModule } from '../../lib/dashboard/index.js';
import { DashboardService, type DashboardRequest } from '../../lib/dashboard/dashboard.service.js';
import { parseForm } from '../../lib/dashboard/form-body.js';
import { HTTP_ADAPTERS } from '../helpers/http-adapters.js';
import { nestEngines } from '../nest/nest-fixtures.js';
import { TEST_TOKEN, TokenGuard, withDashboardApp } from './dashboard-app.js';
import { type Store } from '../../lib/index.js';

const BASE = '/ops/alkstore';

/** One route of the application itself, next to the dashboard. */
@Controller('echo')
class EchoController {
  @Post()
  echo(@Body() body: unknown): { body: unknown } {
    return { body: body ?? null };
  }
}
const XSS = '<script>window.__owned = 1</script>';

/** A fresh CSRF cookie and form token from a page load. */
async function csrfOf(app: INestApplication): Promise<{ cookie: string; token: string }> {
  const res = await request(app.getHttpServer()).get(`${BASE}/dead`).set('x-admin-token', TEST_TOKEN).expect(200);
  const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const cookie = setCookie.find((c) => c.startsWith('alkstore_csrf='))!.split(';')[0]!;
  const token = /<meta name="csrf-token" content="([^"]+)"\s*\/?>/.exec(res.text)?.[1];
  if (!token) throw new Error('no csrf token in the page');
  return { cookie, token };
}

/** Makes one dead job on `queue` and returns its id. */
async function deadJob(store: Store, queue: string, payload: unknown): Promise<number> {
  const q = store.queue(queue, { maxAttempts: 1 });
  const id = await q.enqueue(payload);
  const job = await q.claimOne('w');
  if (!job || job.id !== id) throw new Error('could not claim');
  await job.fail(new Error(`failed with ${XSS}`));
  return id;
}

describe('dashboard options', () => {
  it('refuses to start without an access rule', () => {
    expect(() => AlkstoreDashboardModule.forRoot({ path: '/alkstore' })).toThrow(InvalidOption);
    expect(() => AlkstoreDashboardModule.forRoot({ path: '/alkstore', readOnly: false })).toThrow(/guard/);
    expect(() => AlkstoreDashboardModule.forRoot(undefined as never)).toThrow(InvalidOption);
    expect(() => AlkstoreDashboardModule.forRoot({ guard: {} as never })).toThrow(/guard/);
    expect(() => AlkstoreDashboardModule.forRoot({ guard: TokenGuard, path: '../x' })).toThrow(/path/);
    expect(() => AlkstoreDashboardModule.forRoot({ guard: TokenGuard })).not.toThrow();
    expect(() => AlkstoreDashboardModule.forRoot({ readOnly: true })).not.toThrow();
  });

  it('parses a form to its first values, with no prototype to pollute', () => {
    const form = parseForm('a=1&a=2&b=x+y%21&__proto__=z');
    expect({ ...form }).toEqual({ a: '1', b: 'x y!', ['__proto__']: 'z' });
    expect(Object.getPrototypeOf(form)).toBeNull();
  });
});

for (const engine of nestEngines())
  for (const adapter of HTTP_ADAPTERS) {
    describe(`dashboard over HTTP [${engine.name}, ${adapter}]`, () => {
      let app: INestApplication;
      let store: Store;
      withDashboardApp(engine, (made) => ({ app, store } = made), undefined, adapter);

      it('answers nothing under the mount path without the guard’s consent', async () => {
        const http = request(app.getHttpServer());
        for (const path of [
          '',
          '/',
          '/queue?name=x',
          '/dead',
          '/schedules',
          '/streams',
          '/outboxes',
          '/nope',
          '/a/b/c',
        ]) {
          const res = await http.get(`${BASE}${path}`);
          // Fastify routes `/x/` apart from `/x` (ignoreTrailingSlash is off by default): the app's own 404, no dashboard route.
          expect(res.status).toBe(path === '/' && adapter === 'fastify' ? 404 : 403);
          expect(res.text).not.toContain('alkstore_csrf');
        }
        await http.post(`${BASE}/action`).type('form').send({ action: 'purge-all', queue: 'x' }).expect(403);
        await http.get(`${BASE}/nope`).set('x-admin-token', TEST_TOKEN).expect(404);
      });

      it('lists queues with their counts and escapes payloads and errors', async () => {
        const queue = `emails-${engine.kind}`;
        const dead = await deadJob(store, queue, { html: XSS });
        await store.queue(queue).enqueue({ to: 'a@example.com' });
        await store.queue(queue).enqueue({ later: true }, { delayMs: 3_600_000 });
        const http = request(app.getHttpServer());
        const home = await http.get(BASE).set('x-admin-token', TEST_TOKEN).expect(200);
        expect(home.headers['content-type']).toMatch(/text\/html/);
        expect(home.headers['content-security-policy']).toContain("default-src 'none'");
        const row = new RegExp(`data-queue="${queue}">.*?</tr>`, 's').exec(home.text)![0];
        expect(row.match(/<td class="n">[^<]*<\/td>/g)!.slice(0, 3)).toEqual([
          '<td class="n">2</td>',
          '<td class="n">0</td>',
          '<td class="n">1</td>',
        ]);
        expect(home.text).toContain('<svg');
        // Every link of the menu answers, the home page's own included.
        const menu = [...home.text.matchAll(/<header>(.*?)<\/header>/gs)].flatMap((m) =>
          [...m[1]!.matchAll(/href="([^"]+)"/g)].map((h) => h[1]!),
        );
        expect(menu).toContain(BASE);
        for (const href of menu)
          await http.get(href.replace(/&amp;/g, '&')).set('x-admin-token', TEST_TOKEN).expect(200);
        const page = await http
          .get(`${BASE}/queue`)
          .query({ name: queue, state: 'dead' })
          .set('x-admin-token', TEST_TOKEN)
          .expect(200);
        expect(page.text).toContain(`data-job="${dead}"`);
        // One script only: the live-update script, carrying this response's CSP nonce.
        const nonce = /script-src 'nonce-([^']+)'/.exec(page.headers['content-security-policy'] as string)?.[1];
        expect(nonce).toBeDefined();
        expect([...page.text.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([`<script nonce="${nonce}">`]);
        expect(page.text).toContain('&lt;script&gt;window.__owned = 1&lt;/script&gt;');
      });

      it('redrives a dead job only after a CSRF-checked POST and a confirmation', async () => {
        const queue = `redrive-${engine.kind}`;
        const id = await deadJob(store, queue, { n: 1 });
        const http = request(app.getHttpServer());
        const { cookie, token } = await csrfOf(app);
        // No token, a wrong token, a cross-site request: refused, nothing changes.
        await http
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .type('form')
          .send({ action: 'redrive', queue, id: String(id), confirm: 'yes' })
          .expect(403);
        await http
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .type('form')
          .send({ csrf: 'x'.repeat(43), action: 'redrive', queue, id: String(id), confirm: 'yes' })
          .expect(403);
        await http
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .set('sec-fetch-site', 'cross-site')
          .type('form')
          .send({ csrf: token, action: 'redrive', queue, id: String(id), confirm: 'yes' })
          .expect(403);
        // A page with an opaque origin (a sandboxed frame, a data: or file: page) sends Origin: null.
        const opaque = await http
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .set('origin', 'null')
          .type('form')
          .send({ csrf: token, action: 'redrive', queue, id: String(id), confirm: 'yes' });
        expect([opaque.status, opaque.text]).toEqual([403, expect.stringContaining('CSRF check failed')]);
        expect((await store.queue(queue).getJob(id))?.state).toBe('dead');
        // First POST: a confirmation page, still nothing changed.
        const confirm = await http
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .type('form')
          .send({ csrf: token, action: 'redrive', queue, id: String(id) })
          .expect(200);
        expect(confirm.text).toContain('name="confirm" value="yes"');
        expect((await store.queue(queue).getJob(id))?.state).toBe('dead');
        // Confirmed: done, and redirected back to the dead letters (the page's own Origin passes).
        const done = await http
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .set('host', 'ops.example:8080')
          .set('origin', 'http://ops.example:8080')
          .type('form')
          .send({ csrf: token, action: 'redrive', queue, id: String(id), confirm: 'yes' })
          .expect(303);
        expect(done.headers.location).toBe(`${BASE}/dead?queue=${queue}&done=redrive&n=1`);
        expect(await store.queue(queue).getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
      });

      it('purges one, redrives all and purges all dead letters', async () => {
        const queue = `purge-${engine.kind}`;
        const a = await deadJob(store, queue, 1);
        const b = await deadJob(store, queue, 2);
        const c = await deadJob(store, queue, 3);
        const { cookie, token } = await csrfOf(app);
        const post = (fields: Record<string, string>) =>
          request(app.getHttpServer())
            .post(`${BASE}/action`)
            .set('x-admin-token', TEST_TOKEN)
            .set('cookie', cookie)
            .type('form')
            .send({ csrf: token, confirm: 'yes', ...fields })
            .expect(303);
        await post({ action: 'purge', queue, id: String(a) });
        expect(await store.queue(queue).getJob(a)).toBeNull();
        await post({ action: 'redrive-all', queue });
        expect((await store.queue(queue).stats()).pending).toBe(2);
        for (const j of await store.queue(queue).claimBatch(2, 'w')) await j.fail('again');
        await post({ action: 'purge-all', queue });
        expect(await store.queue(queue).getJob(b)).toBeNull();
        expect(await store.queue(queue).getJob(c)).toBeNull();
      });

      it('redrive-all redrives past a held unique key and the flash names the job left dead', async () => {
        const queue = `held-${engine.kind}`;
        const q = store.queue(queue, { maxAttempts: 1 });
        const held = await q.enqueue({ k: 1 }, { uniqueKey: 'k' });
        const free = await q.enqueue({ k: 2 });
        for (const j of await q.claimBatch(2, 'w')) await j.fail('x');
        await q.enqueue({ holder: true }, { uniqueKey: 'k' });
        const { cookie, token } = await csrfOf(app);
        const done = await request(app.getHttpServer())
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .type('form')
          .send({ csrf: token, confirm: 'yes', action: 'redrive-all', queue })
          .expect(303);
        expect(done.headers.location).toBe(`${BASE}/dead?queue=${queue}&done=redrive-all&n=1&c=1&cids=${held}`);
        expect(await q.getJob(free)).toMatchObject({ state: 'pending' });
        expect(await q.getJob(held)).toMatchObject({ state: 'dead' });
        const page = await request(app.getHttpServer())
          .get(done.headers.location as string)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .expect(200);
        expect(page.text).toContain(`Retried 1 dead job. 1 stayed dead: a live job holds its unique key (id ${held}).`);
      });

      it('cancels a pending job and triggers a schedule', async () => {
        const queue = `cancel-${engine.kind}`;
        const id = await store.queue(queue).enqueue('x');
        await store.schedule(`nightly-${engine.kind}`, '@every 1d', `reports-${engine.kind}`, { kind: 'nightly' });
        const { cookie, token } = await csrfOf(app);
        const post = (fields: Record<string, string>) =>
          request(app.getHttpServer())
            .post(`${BASE}/action`)
            .set('x-admin-token', TEST_TOKEN)
            .set('cookie', cookie)
            .type('form')
            .send({ csrf: token, confirm: 'yes', ...fields })
            .expect(303);
        await post({ action: 'cancel', queue, id: String(id) });
        expect((await store.queue(queue).getJob(id))!.state).toBe('cancelled');
        const before = await store.getSchedule(`nightly-${engine.kind}`);
        await post({ action: 'trigger', schedule: `nightly-${engine.kind}` });
        const jobs = await store.admin().listJobs(`reports-${engine.kind}`, { state: 'pending' });
        expect(jobs.jobs.map((j) => j.payload)).toEqual([{ kind: 'nightly' }]);
        expect((await store.getSchedule(`nightly-${engine.kind}`))?.nextFireAt).toBe(before?.nextFireAt);
        const page = await request(app.getHttpServer())
          .get(`${BASE}/schedules`)
          .set('x-admin-token', TEST_TOKEN)
          .expect(200);
        expect(page.text).toContain(`data-schedule="nightly-${engine.kind}"`);
        expect(page.text).toContain('@every 1d');
      });

      it('pauses and resumes a queue', async () => {
        const queue = `paused-${engine.kind}`;
        await store.queue(queue).enqueue('x');
        const { cookie, token } = await csrfOf(app);
        const post = (fields: Record<string, string>) =>
          request(app.getHttpServer())
            .post(`${BASE}/action`)
            .set('x-admin-token', TEST_TOKEN)
            .set('cookie', cookie)
            .type('form')
            .send({ csrf: token, ...fields });
        const confirm = await post({ action: 'pause', queue }).expect(200);
        expect(confirm.text).toContain('name="confirm" value="yes"');
        expect((await store.queue(queue).settings()).paused).toBe(false);
        const paused = await post({ action: 'pause', queue, confirm: 'yes' }).expect(303);
        expect(paused.headers.location).toBe(`${BASE}?done=pause&n=1`);
        expect((await store.queue(queue).settings()).paused).toBe(true);
        expect(await store.queue(queue).claimOne('w')).toBeNull();
        await post({ action: 'resume', queue, confirm: 'yes' }).expect(303);
        expect((await store.queue(queue).settings()).paused).toBe(false);
      });

      it('pages a queue by keyset with a next link', async () => {
        const queue = `paged-${engine.kind}`;
        await store.queue(queue).enqueueMany(Array.from({ length: 120 }, (_, i) => ({ i })));
        const http = request(app.getHttpServer());
        const seen = new Set<string>();
        let url: string | null = `${BASE}/queue?name=${queue}&state=pending`;
        let pages = 0;
        while (url) {
          const res: request.Response = await http.get(url).set('x-admin-token', TEST_TOKEN).expect(200);
          for (const m of res.text.matchAll(/data-job="(\d+)"/g)) seen.add(m[1]!);
          const next: string | undefined = /rel="next" href="([^"]+)"/.exec(res.text)?.[1];
          url = next ? next.replace(/&amp;/g, '&') : null;
          pages++;
        }
        expect(pages).toBe(3);
        expect(seen.size).toBe(120);
      });

      it('shows streams with consumer lag and outboxes with their backlog', async () => {
        const s = store.stream(`events-${engine.kind}`);
        for (let i = 0; i < 4; i++) await s.publish(i);
        await s.saveOffset('projector', 1);
        await store.outboxEnqueue(`webhooks-${engine.kind}`, { hook: 1 });
        const http = request(app.getHttpServer());
        const streams = await http.get(`${BASE}/streams`).set('x-admin-token', TEST_TOKEN).expect(200);
        expect(streams.text).toMatch(
          new RegExp(
            `events-${engine.kind}</td>\\s*<td class="n" rowspan="1">4</td>\\s*<td>projector</td>\\s*<td class="n">1</td>\\s*<td class="n warn">3</td>`,
          ),
        );
        const boxes = await http.get(`${BASE}/outboxes`).set('x-admin-token', TEST_TOKEN).expect(200);
        expect(boxes.text).toContain(`data-outbox="webhooks-${engine.kind}"`);
        expect(boxes.text).toContain('1 pending');
      });
    });
  }

for (const adapter of HTTP_ADAPTERS)
  describe(`read-only dashboard without a guard [${adapter}]`, () => {
    let app: INestApplication;
    let store: Store;
    withDashboardApp(nestEngines()[0]!, (made) => ({ app, store } = made), { readOnly: true }, adapter);

    it('serves pages without actions and refuses every POST', async () => {
      const id = await deadJob(store, 'ro', 1);
      const http = request(app.getHttpServer());
      const page = await http.get(`${BASE}/dead?queue=ro`).expect(200);
      expect(page.text).toContain(`data-job="${id}"`);
      expect(page.text).not.toContain('data-action=');
      await http
        .post(`${BASE}/action`)
        .type('form')
        .send({ action: 'purge', queue: 'ro', id: String(id), confirm: 'yes' })
        .expect(403);
      expect((await store.queue('ro').getJob(id))?.state).toBe('dead');
    });

    it('marks its cookie Secure on HTTPS requests as either adapter describes them', async () => {
      const dashboard = app.get(DashboardService, { strict: false });
      const cookieOf = async (extra: Partial<DashboardRequest>) =>
        (await dashboard.page({ method: 'GET', url: BASE, headers: {}, ...extra }, 'dead')).headers['set-cookie'];
      expect(await cookieOf({})).not.toContain('Secure');
      expect(await cookieOf({ secure: true })).toContain('; Secure');
      expect(await cookieOf({ protocol: 'https' })).toContain('; Secure');
    });
  });

for (const adapter of HTTP_ADAPTERS)
  describe(`dashboard in an app without body parsing [${adapter}]`, () => {
    let app: INestApplication;
    let store: Store;
    withDashboardApp(nestEngines()[0]!, (made) => ({ app, store } = made), undefined, adapter, { bodyParser: false }, [
      EchoController,
    ]);

    it('reads its own forms: a confirmed redrive works, a forged one is refused', async () => {
      const id = await deadJob(store, 'raw', 1);
      const { cookie, token } = await csrfOf(app);
      const post = (fields: Record<string, string>) =>
        request(app.getHttpServer())
          .post(`${BASE}/action`)
          .set('x-admin-token', TEST_TOKEN)
          .set('cookie', cookie)
          .type('form')
          .send({ action: 'redrive', queue: 'raw', id: String(id), ...fields });
      await post({ csrf: 'x'.repeat(43), confirm: 'yes' }).expect(403);
      expect((await post({ csrf: token }).expect(200)).text).toContain('name="confirm" value="yes"');
      await post({ csrf: token, confirm: 'yes' }).expect(303);
      expect(await store.queue('raw').getJob(id)).toMatchObject({ state: 'pending', attempts: 0 });
    });

    it('refuses a form over 64 KiB', async () => {
      const id = await deadJob(store, 'raw-big', 1);
      const { cookie, token } = await csrfOf(app);
      await request(app.getHttpServer())
        .post(`${BASE}/action`)
        .set('x-admin-token', TEST_TOKEN)
        .set('cookie', cookie)
        .type('form')
        .send({
          csrf: token,
          action: 'purge',
          queue: 'raw-big',
          id: String(id),
          confirm: 'yes',
          pad: 'x'.repeat(70_000),
        })
        .expect(413);
      expect((await store.queue('raw-big').getJob(id))?.state).toBe('dead');
    });

    it('leaves the app’s other routes as they were: Fastify still answers 415, Express parses nothing', async () => {
      const res = await request(app.getHttpServer()).post('/ops/echo').type('form').send({ a: '1' });
      if (adapter === 'fastify') expect(res.status).toBe(415);
      else expect(res.body).toEqual({ body: null });
    });
  });
